// TemplateError: a parse or render failure of a chat template, with the template line (and column when
// known). raise_exception() from a template produces one whose message is the template's text verbatim.
#pragma once

#include <string>

#include "core/error.h"

namespace loradesk::jinja {

class TemplateError : public ExpectedError {
  public:
    // what() = "template line L[, column C]: message", or the bare message for raise_exception().
    TemplateError(std::string message, int line, int column = 0, bool raised = false)
        : ExpectedError(ErrorCode::invalid_argument, format(message, line, column, raised)),
          m_message(std::move(message)),
          m_line(line),
          m_column(column),
          m_raised(raised) {}

    const std::string& message() const { return m_message; }
    int line() const { return m_line; }
    int column() const { return m_column; }
    bool raised_by_template() const { return m_raised; }

  private:
    static std::string format(const std::string& message, int line, int column, bool raised) {
        if (raised) return message;
        std::string where = "template line " + std::to_string(line);
        if (column > 0) where += ", column " + std::to_string(column);
        return where + ": " + message;
    }
    std::string m_message;
    int m_line;
    int m_column;
    bool m_raised;
};

}  // namespace loradesk::jinja
