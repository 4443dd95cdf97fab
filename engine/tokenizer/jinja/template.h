// Template: a parsed Jinja2 template (AST built once) that renders with transformers' environment:
// trim_blocks, lstrip_blocks, loopcontrols, the sandbox's attribute rules, globals raise_exception,
// strftime_now, range, dict, namespace, joiner. Immutable after construction; render() is const and
// thread-safe (each call builds its own scopes and values).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/jinja/template_error.h"
#include "tokenizer/jinja/value.h"

namespace loradesk::jinja {

struct Stmt;

class Template {
  public:
    // Parses `source`; throws TemplateError (with line and column) on syntax errors or unknown filters/tests.
    explicit Template(std::string_view source);

    // Renders with the given top-level variables; throws TemplateError with the template line on failure.
    std::string render(const std::vector<std::pair<std::string, Value>>& variables) const;
    // Same, with the members of a JSON object as variables.
    std::string render_json(const nlohmann::json& variables) const;

  private:
    std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> m_body;
};

}  // namespace loradesk::jinja
