#include "core/error.h"

namespace loradesk {

std::string_view error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::ok:
            return "ok";
        case ErrorCode::invalid_argument:
            return "invalid_argument";
        case ErrorCode::not_found:
            return "not_found";
        case ErrorCode::conflict:
            return "conflict";
        case ErrorCode::context_too_long:
            return "context_too_long";
        case ErrorCode::too_large:
            return "too_large";
        case ErrorCode::capacity:
            return "capacity";
        case ErrorCode::unsupported:
            return "unsupported";
        case ErrorCode::corrupt_file:
            return "corrupt_file";
        case ErrorCode::io:
            return "io";
        case ErrorCode::unauthorized:
            return "unauthorized";
        case ErrorCode::unavailable:
            return "unavailable";
        case ErrorCode::cancelled:
            return "cancelled";
        case ErrorCode::internal:
            return "internal";
    }
    return "unknown";
}

void throw_error(ErrorCode code, std::string message) { throw Error(code, std::move(message)); }
void throw_expected(ErrorCode code, std::string message) { throw ExpectedError(code, std::move(message)); }

}  // namespace loradesk
