// Error types shared by every engine layer.
// Engine internals throw loradesk::Error (with an ErrorCode that the facade maps to HTTP statuses and UI
// messages); the facade converts them to Status / Result<T> so that nothing throws across it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace loradesk {

// Closed set of failure classes. User-caused ones say what to do in their message.
enum class ErrorCode {
    ok = 0,
    invalid_argument,  // bad request or option value (HTTP 400)
    not_found,         // unknown model / adapter / file (404)
    conflict,          // adapter busy or being unloaded, name taken (409)
    context_too_long,  // prompt + completion exceed the context (400, context_length_exceeded)
    too_large,         // request body or file over a limit (413)
    capacity,          // queue full, no KV pages or slots right now (429)
    unsupported,       // valid input we cannot serve exactly (DoRA, unknown architecture) (400)
    corrupt_file,      // malformed safetensors / json / database (400 or 500 by context)
    io,                // filesystem failure (500)
    unauthorized,      // missing or wrong API key (401)
    unavailable,       // engine not ready, no GPU driver (503)
    cancelled,         // the client went away
    internal,          // a bug or a device failure (500)
};

std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
  public:
    Error(ErrorCode code, std::string message) : std::runtime_error(std::move(message)), m_code(code) {}
    ErrorCode code() const { return m_code; }

  private:
    ErrorCode m_code;
};

// Failures caused by the user's input: expected, reported, never logged as bugs.
class ExpectedError : public Error {
  public:
    using Error::Error;
};

[[noreturn]] void throw_error(ErrorCode code, std::string message);
[[noreturn]] void throw_expected(ErrorCode code, std::string message);

}  // namespace loradesk
