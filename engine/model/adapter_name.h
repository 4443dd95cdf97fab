// Adapter names and aliases: what a client or a folder may call an adapter. Names become metric
// label values, log text, catalog keys and the `model` of requests, so they are one safe token:
// [A-Za-z0-9._:-], 1 to 128 characters, not a reserved word. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loradesk::model {

inline constexpr std::size_t kMaxAdapterNameLength = 128;
// The allowed form, as error messages spell it out.
inline constexpr std::string_view kAdapterNameRule =
    "1 to 128 characters from A-Z a-z 0-9 . _ : -, not 'base', '.', '..' or the base model's id";

// Why `name` cannot name an adapter, or nullopt when it can. `base_model_id` ("" = unknown) is
// reserved too, and so is "<base_model_id>:" / "base:" as a prefix (that spelling selects an
// adapter of the base model, so such a name could never be reached).
std::optional<std::string> adapter_name_problem(std::string_view name, std::string_view base_model_id = {});

// Throws ExpectedError(invalid_argument) "<what> '<name>' is not allowed: <problem>; use <rule>".
// `what` is "adapter name", "alias", ...
void check_adapter_name(std::string_view name, std::string_view base_model_id = {},
                        std::string_view what = "adapter name");

// `name` fit for a log line or an error message: control bytes and non-ASCII escaped as \xNN,
// quotes and backslashes escaped, cut to 80 characters with "...". Never forges a line.
std::string printable_name(std::string_view name);
// Text from outside (a folder path, a message that quotes one) fit for one log line: only control
// bytes are escaped as \xNN, so UTF-8 stays readable. Not cut.
std::string printable_text(std::string_view text);

}  // namespace loradesk::model
