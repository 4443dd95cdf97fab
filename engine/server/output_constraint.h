// Structured-output fields of a generation request, turned into the one grammar the engine enforces
// (api::GenerateRequest::grammar): OpenAI's response_format (json_object, json_schema with strict), vLLM's
// guided_json / guided_regex / guided_choice / guided_grammar and its newer structured_outputs object, and
// llama.cpp's top-level grammar / json_schema. At most one may be given; a schema keyword or regex construct the
// grammar compiler cannot enforce is a 400 that names it, never silently dropped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace loradesk::server {

// The GBNF for the request's output constraint, or "" when it has none. Throws ApiError 400 naming the field.
// `body` holds at least the constraint fields, in the client's key order (parse_ordered_fields).
std::string output_constraint_grammar(const nlohmann::ordered_json& body);

// The top-level fields output_constraint_grammar reads (and tools), for parse_ordered_fields.
inline constexpr std::string_view kOrderedFields[] = {"response_format", "guided_json",    "guided_regex",
                                                      "guided_choice",   "guided_grammar", "structured_outputs",
                                                      "grammar",         "json_schema",    "guided_whitespace_pattern",
                                                      "tools",           "format"};

// The kOrderedFields of a body read without parse_ordered_fields (their keys then sorted), for callers that built
// the body themselves.
nlohmann::ordered_json ordered_fields_of(const nlohmann::json& body);

// The GBNF for a JSON schema given as `param` (a schema object, or a string holding one). Throws ApiError 400.
std::string schema_grammar(const nlohmann::ordered_json& schema, bool strict, const std::string& param);

}  // namespace loradesk::server
