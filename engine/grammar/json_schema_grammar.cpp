// Entry points of the JSON Schema -> GBNF translation: option handling and the exception -> Result boundary.
#include "grammar/json_schema_grammar.h"

#include <fmt/format.h>

#include "grammar/json_schema_compiler.h"

namespace loradesk::grammar {
namespace {

bool valid_prefix(std::string_view prefix) {
    for (char c : prefix)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    return true;
}

}  // namespace

Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, std::string_view prefix,
                                      const SchemaGrammarOptions& options) {
    if (!valid_prefix(prefix))
        return Status::failure(
            ErrorCode::invalid_argument,
            fmt::format("grammar rule prefix '{}' may only hold letters, digits, '-' and '_'", prefix));
    return capture_result<std::string>([&] {
        json_schema::SchemaCompiler compiler(schema, std::string(prefix), options);
        return compiler.compile();
    });
}

Result<std::string> json_schema_rules(const nlohmann::json& schema, std::string_view prefix,
                                      const SchemaGrammarOptions& options) {
    return json_schema_rules(nlohmann::ordered_json(schema), prefix, options);
}

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaGrammarOptions& options) {
    return json_schema_rules(schema, "", options);
}

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema, const SchemaGrammarOptions& options) {
    return json_schema_rules(nlohmann::ordered_json(schema), "", options);
}

std::string json_object_gbnf() {
    json_schema::SchemaCompiler compiler(nlohmann::ordered_json::object(), "", {});
    return compiler.compile_any_object();
}

}  // namespace loradesk::grammar
