// Status and Result<T>: how errors cross the Engine facade (which never throws).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/error.h"

namespace loradesk {

struct Status {
    ErrorCode code = ErrorCode::ok;
    std::string message;

    bool ok() const { return code == ErrorCode::ok; }
    static Status success() { return {}; }
    static Status failure(ErrorCode c, std::string m) { return {c, std::move(m)}; }
};

template <class T>
class Result {
  public:
    Result(T value) : m_value(std::move(value)) {}          // NOLINT: implicit by design
    Result(Status status) : m_status(std::move(status)) {}  // NOLINT
    bool ok() const { return m_value.has_value(); }
    const Status& status() const { return m_status; }
    T& value() & { return *m_value; }
    const T& value() const& { return *m_value; }
    T&& value() && { return std::move(*m_value); }
    T* operator->() { return &*m_value; }
    const T* operator->() const { return &*m_value; }

  private:
    std::optional<T> m_value;
    Status m_status;
};

// Runs fn and turns any exception into a Status. For facade entry points.
template <class Fn>
Status capture_status(Fn&& fn) noexcept {
    try {
        fn();
        return Status::success();
    } catch (const Error& e) {
        return Status::failure(e.code(), e.what());
    } catch (const std::exception& e) {
        return Status::failure(ErrorCode::internal, e.what());
    } catch (...) {
        return Status::failure(ErrorCode::internal, "unknown internal error");
    }
}

// Runs fn (which returns a T) and turns any exception into a failed Result. T must be default-
// constructible.
template <class T, class Fn>
Result<T> capture_result(Fn&& fn) noexcept {
    T value{};
    Status s = capture_status([&] { value = fn(); });
    if (!s.ok()) return s;
    return Result<T>(std::move(value));
}

}  // namespace loradesk
