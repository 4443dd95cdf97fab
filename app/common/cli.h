// loradeskd's command framework: each command lives in its own cmd_<name>.cpp, declares its options
// (for parsing and --help) and registers itself with LORADESK_COMMAND. Qt-free.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loradesk::cli {

struct OptionSpec {
    std::string name;        // without dashes: "model"
    std::string value_name;  // "DIR"; empty for a flag
    std::string help;
    bool repeatable = false;
};

class Args {
  public:
    // Parses argv against specs; throws Error(invalid_argument) with a usage hint on unknown or
    // malformed options. "--help" is always accepted.
    Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs);

    bool help() const { return m_help; }
    bool flag(const std::string& name) const;
    bool has(const std::string& name) const;
    std::string get(const std::string& name, const std::string& fallback = "") const;
    std::string require(const std::string& name) const;  // throws with "--name is required"
    long long get_int(const std::string& name, long long fallback) const;
    double get_double(const std::string& name, double fallback) const;
    std::vector<std::string> all(const std::string& name) const;
    const std::vector<std::string>& positional() const { return m_positional; }

  private:
    std::map<std::string, std::vector<std::string>> m_values;
    std::vector<std::string> m_positional;
    bool m_help = false;
};

using CommandFn = int (*)(const std::vector<std::string>& argv);

struct Command {
    std::string name;
    std::string summary;
    std::string usage;  // first line of --help: "loradeskd logits --model DIR ..."
    std::vector<OptionSpec> options;
    int (*run)(const Args& args);
};

bool register_command(Command command);
const std::map<std::string, Command>& commands();
std::string help_text(const Command& command);

// Comma-separated integers "1,2,3" (throws Error(invalid_argument) naming the option).
std::vector<int> parse_int_list(const std::string& text, const std::string& option);

}  // namespace loradesk::cli

#define LORADESK_CONCAT_INNER(a, b) a##b
#define LORADESK_CONCAT(a, b) LORADESK_CONCAT_INNER(a, b)
// Registers a command at static-initialisation time (cmd_*.cpp files are linked into the executable
// directly, never through a static library, so the registration is never dropped by the linker).
#define LORADESK_COMMAND(...) \
    static const bool LORADESK_CONCAT(kRegistered_, __LINE__) = ::loradesk::cli::register_command(__VA_ARGS__)
