#include "cli.h"

#include <cstdlib>

#include "core/error.h"

namespace loradesk::cli {
namespace {

std::map<std::string, Command>& registry() {
    static std::map<std::string, Command> r;
    return r;
}

}  // namespace

Args::Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a == "--help" || a == "-h") {
            m_help = true;
            continue;
        }
        if (a.rfind("--", 0) != 0) {
            m_positional.push_back(a);
            continue;
        }
        std::string name = a.substr(2), value;
        bool inline_value = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            inline_value = true;
        }
        const OptionSpec* spec = nullptr;
        for (auto& s : specs)
            if (s.name == name) spec = &s;
        if (!spec) throw_expected(ErrorCode::invalid_argument, "unknown option --" + name + " (see --help)");
        if (spec->value_name.empty()) {
            if (inline_value) throw_expected(ErrorCode::invalid_argument, "option --" + name + " takes no value");
            m_values[name].push_back("1");
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= argv.size())
                throw_expected(ErrorCode::invalid_argument, "option --" + name + " needs a value " + spec->value_name);
            value = argv[++i];
        }
        auto& slot = m_values[name];
        if (!slot.empty() && !spec->repeatable)
            throw_expected(ErrorCode::invalid_argument, "option --" + name + " given more than once");
        slot.push_back(value);
    }
}

bool Args::flag(const std::string& name) const { return m_values.count(name) > 0; }
bool Args::has(const std::string& name) const { return m_values.count(name) > 0; }

std::string Args::get(const std::string& name, const std::string& fallback) const {
    auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second.back();
}

std::string Args::require(const std::string& name) const {
    auto it = m_values.find(name);
    if (it == m_values.end()) throw_expected(ErrorCode::invalid_argument, "--" + name + " is required (see --help)");
    return it->second.back();
}

long long Args::get_int(const std::string& name, long long fallback) const {
    if (!has(name)) return fallback;
    std::string v = get(name);
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end)
        throw_expected(ErrorCode::invalid_argument, "--" + name + " expects an integer, got '" + v + "'");
    return x;
}

double Args::get_double(const std::string& name, double fallback) const {
    if (!has(name)) return fallback;
    std::string v = get(name);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end)
        throw_expected(ErrorCode::invalid_argument, "--" + name + " expects a number, got '" + v + "'");
    return x;
}

std::vector<std::string> Args::all(const std::string& name) const {
    auto it = m_values.find(name);
    return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

bool register_command(Command command) {
    auto name = command.name;
    registry().emplace(std::move(name), std::move(command));
    return true;
}

const std::map<std::string, Command>& commands() { return registry(); }

std::string help_text(const Command& c) {
    std::string s = "usage: " + c.usage + "\n\n" + c.summary + "\n";
    if (!c.options.empty()) s += "\noptions:\n";
    for (auto& o : c.options) {
        std::string left = "  --" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
        if (left.size() < 28)
            left.resize(28, ' ');
        else
            left += "  ";
        s += left + o.help + (o.repeatable ? " (repeatable)" : "") + "\n";
    }
    s += "  --help                    show this help\n";
    return s;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
    std::vector<int> out;
    std::size_t i = 0;
    while (i <= text.size()) {
        std::size_t j = text.find(',', i);
        if (j == std::string::npos) j = text.size();
        std::string item = text.substr(i, j - i);
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end)
            throw_expected(ErrorCode::invalid_argument,
                           "--" + option + " expects comma-separated integers, got '" + item + "'");
        out.push_back(int(v));
        i = j + 1;
    }
    return out;
}

}  // namespace loradesk::cli
