// OpenAI-style errors: the nested {"error":{message,type,param,code}} body, the HTTP status and the
// Retry-After header, and the mapping from the engine's ErrorCode. Route code throws ApiError; the
// router turns it into a response, so nothing escapes to the transport.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "server/http_types.h"

namespace loradesk::server {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string type, std::string message, std::string param = {}, nlohmann::json code = nullptr)
        : std::runtime_error(std::move(message)),
          status(status),
          type(std::move(type)),
          param(std::move(param)),
          code(std::move(code)) {}

    int status;
    std::string type;
    std::string param;      // "" = null
    nlohmann::json code;    // string or null
    int retry_after_s = 0;  // > 0 adds Retry-After

    nlohmann::ordered_json body() const;
};

// 400 naming the offending parameter.
[[noreturn]] void throw_invalid(const std::string& param, const std::string& message);

// Maps an engine failure onto the OpenAI error classes. `param` names the field a model/prompt error is
// about ("model", "messages", "prompt"); `max_context` is used for OpenAI's context-overflow wording.
ApiError api_error_from_status(const Status& status, const std::string& param = {}, int max_context = 0,
                               int retry_after_s = 1);

// A complete JSON error response (with Retry-After when set).
HttpResponse error_response(const ApiError& error);

// The SSE form for errors after the headers were sent: data: {"error":...}\n\n
std::string sse_error_event(const ApiError& error);

}  // namespace loradesk::server
