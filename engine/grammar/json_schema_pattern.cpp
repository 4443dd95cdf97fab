// SchemaCompiler for string patterns: placeholder until the regex translation lands.
#include <fmt/format.h>

#include "grammar/json_schema_compiler.h"

namespace loradesk::grammar::json_schema {

std::string SchemaCompiler::visit_pattern(const Json& schema, const std::string& path, const std::string& hint) {
    (void)schema;
    (void)hint;
    fail(fmt::format("unsupported JSON Schema keyword 'pattern' at {}", path_text(path)));
}

}  // namespace loradesk::grammar::json_schema
