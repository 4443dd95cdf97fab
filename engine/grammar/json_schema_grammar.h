// JSON Schema -> GBNF (llama.cpp's dialect, read by compile_gbnf) for structured outputs: response_format
// json_schema / json_object, guided_json and tool-call arguments. Owns the translation only; compiling and matching
// the grammar belong to compile_gbnf and GrammarMatcher.
//
// Supported: the subset that OpenAI strict mode, Pydantic v2 and zod emit (see docs in json_schema_compiler.h).
// Anything else is an ErrorCode::invalid_argument naming the keyword and its JSON pointer, never ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace loradesk::grammar {

struct SchemaGrammarOptions {
    // OpenAI strict mode: additionalProperties defaults to false and every listed property is emitted (OpenAI
    // requires strict schemas to list all of them in `required`).
    bool strict = false;
    // Allow JSON whitespace between tokens. Each gap is bounded: at most 20 spaces/tabs, or 1-2 newlines followed by
    // at most 20 spaces/tabs, so that a model cannot loop on layout.
    bool any_whitespace = true;
};

// A whole grammar whose root rule is `root`.
// Properties are emitted in the order the schema lists them: pass an ordered_json to keep the client's order (a
// plain nlohmann::json sorts object keys, so its "schema order" is alphabetical).
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaGrammarOptions& = {});
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema, const SchemaGrammarOptions& = {});

// The same rules with every rule name prefixed by `prefix` (which must match [A-Za-z0-9_-]*) and the entry rule
// `<prefix>root`, for embedding several schemas in one grammar (tool calls).
Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, std::string_view prefix,
                                      const SchemaGrammarOptions& = {});
Result<std::string> json_schema_rules(const nlohmann::json& schema, std::string_view prefix,
                                      const SchemaGrammarOptions& = {});

// Any JSON object (response_format json_object): root = an object whose values are any JSON values.
std::string json_object_gbnf();

}  // namespace loradesk::grammar
