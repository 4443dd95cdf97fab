// Test helper for tests/js/schema_grammar_fuzz.mjs: reads JSON Schemas as JSON lines on stdin and writes one JSON
// line per schema, {"gbnf": text} or {"error": message}; a grammar that compile_gbnf rejects is {"gbnf_error": ...}.
#include <iostream>
#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema_grammar.h"

int main() {
    using namespace loradesk::grammar;
    for (std::string line; std::getline(std::cin, line);) {
        nlohmann::json out;
        const auto schema = nlohmann::ordered_json::parse(line, nullptr, false);
        if (schema.is_discarded()) {
            out["error"] = "not JSON";
        } else if (auto text = json_schema_to_gbnf(schema); !text.ok()) {
            out["error"] = text.status().message;
        } else {
            out["gbnf"] = text.value();
            if (auto g = compile_gbnf(text.value()); !g.ok()) out["gbnf_error"] = g.status().message;
        }
        std::cout << out.dump() << '\n';
    }
    return 0;
}
