// ErrorCode -> HTTP status / OpenAI error type mapping and the error bodies.
#include "server/api_error.h"

#include <fmt/format.h>

namespace loradesk::server {

nlohmann::ordered_json ApiError::body() const {
    nlohmann::ordered_json e;
    e["message"] = what();
    e["type"] = type;
    e["param"] = param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param);
    e["code"] = code.is_null() ? nlohmann::ordered_json(status) : nlohmann::ordered_json(code);
    nlohmann::ordered_json out;
    out["error"] = std::move(e);
    return out;
}

void throw_invalid(const std::string& param, const std::string& message) {
    throw ApiError(400, "invalid_request_error", message, param);
}

static ApiError context_overflow(const std::string& message, const std::string& param, int max_context) {
    // Clients (litellm, aider, scripts) match on "maximum context length" and the code; keep OpenAI's wording
    // when the engine did not already use it.
    std::string text = message;
    if (text.find("maximum context length") == std::string::npos) {
        text = max_context > 0 ? fmt::format(
                                     "This model's maximum context length is {} tokens. However, {} Please reduce the "
                                     "length of the messages or completion.",
                                     max_context, message)
                               : fmt::format(
                                     "This model's maximum context length was exceeded: {} Please reduce the length of "
                                     "the messages or completion.",
                                     message);
    }
    return ApiError(400, "invalid_request_error", text, param.empty() ? "messages" : param, "context_length_exceeded");
}

ApiError api_error_from_status(const Status& status, const std::string& param, int max_context, int retry_after_s) {
    const std::string& m = status.message;
    switch (status.code) {
        case ErrorCode::ok:
        case ErrorCode::internal:
            return ApiError(500, "server_error", m.empty() ? "internal error" : m);
        case ErrorCode::invalid_argument:
            return ApiError(400, "invalid_request_error", m, param);
        case ErrorCode::unsupported:
            return ApiError(400, "invalid_request_error", m, param, "unsupported");
        case ErrorCode::corrupt_file:
            return ApiError(400, "invalid_request_error", m, param, "corrupt_file");
        case ErrorCode::not_found:
            if (param == "model") return ApiError(404, "invalid_request_error", m, "model", "model_not_found");
            return ApiError(404, "not_found_error", m, param, "not_found");
        case ErrorCode::conflict:
            return ApiError(409, "conflict_error", m, param, "conflict");
        case ErrorCode::context_too_long:
            return context_overflow(m, param, max_context);
        case ErrorCode::too_large:
            return ApiError(413, "invalid_request_error", m, param, "request_too_large");
        case ErrorCode::capacity: {
            ApiError e(429, "rate_limit_error", m, {}, "rate_limit_exceeded");
            e.retry_after_s = retry_after_s;
            return e;
        }
        case ErrorCode::io:
            return ApiError(500, "server_error", m);
        case ErrorCode::unauthorized:
            return ApiError(401, "authentication_error", m, {}, "invalid_api_key");
        case ErrorCode::unavailable: {
            ApiError e(503, "unavailable_error", m);
            e.retry_after_s = retry_after_s;
            return e;
        }
        case ErrorCode::cancelled: {
            ApiError e(503, "unavailable_error",
                       m.empty() ? "the request was cancelled (is the server shutting down?); retry it" : m);
            e.retry_after_s = retry_after_s;
            return e;
        }
    }
    return ApiError(500, "server_error", m);
}

HttpResponse error_response(const ApiError& error) {
    HttpResponse r;
    r.status = error.status;
    r.body = error.body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (error.retry_after_s > 0) r.set_header("Retry-After", std::to_string(error.retry_after_s));
    return r;
}

std::string sse_error_event(const ApiError& error) {
    return "data: " + error.body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace loradesk::server
