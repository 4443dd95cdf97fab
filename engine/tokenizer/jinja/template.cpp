// Template: parse once, render many times with a fresh scope chain per render.
#include "tokenizer/jinja/template.h"

#include <nlohmann/json.hpp>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/parser.h"

namespace loradesk::jinja {

Template::Template(std::string_view source) : m_body(std::make_shared<const Body>(parse_template(source))) {}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& variables) const {
    auto globals = std::make_shared<Frame>();
    install_globals(*globals);
    auto top = std::make_shared<Frame>(globals);
    for (auto& [name, value] : variables) top->set(name, value);
    Interpreter in(top);
    std::string out;
    try {
        in.render_body(*m_body, out);
    } catch (const Failure& f) {
        throw TemplateError(f.message, 0);
    }
    return out;
}

std::string Template::render_json(const nlohmann::json& variables) const {
    if (!variables.is_object()) throw TemplateError("template variables must be a JSON object", 0);
    std::vector<std::pair<std::string, Value>> vars;
    for (auto it = variables.begin(); it != variables.end(); ++it)
        vars.emplace_back(it.key(), Value::from_json(it.value()));
    return render(vars);
}

}  // namespace loradesk::jinja
