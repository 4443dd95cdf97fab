// loradeskd: the headless, Qt-free entry point. Dispatches to the registered commands.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "core/error.h"
#include "core/heap_policy.h"
#include "core/log.h"

namespace {

void print_overview() {
    std::printf("usage: loradeskd COMMAND [options]   (loradeskd COMMAND --help for details)\n\ncommands:\n");
    for (auto& [name, c] : loradesk::cli::commands()) std::printf("  %-14s %s\n", name.c_str(), c.summary.c_str());
    std::printf("  %-14s %s\n", "--version", "print the version and exit");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace loradesk;
    keep_freed_heap();  // LoRA host copies come and go all day (core/heap_policy.h)
    if (argc < 2) {
        print_overview();
        return 2;
    }
    std::string name = argv[1];
    if (name == "--version" || name == "version") {
        std::printf("loradeskd %s\n", LORADESK_VERSION);
        return 0;
    }
    if (name == "--help" || name == "-h" || name == "help") {
        print_overview();
        return 0;
    }
    auto& cmds = cli::commands();
    auto it = cmds.find(name);
    if (it == cmds.end()) {
        std::fprintf(stderr, "loradeskd: unknown command '%s'\n\n", name.c_str());
        print_overview();
        return 2;
    }
    std::vector<std::string> rest(argv + 2, argv + argc);
    try {
        cli::Args args(rest, it->second.options);
        if (args.help()) {
            std::fputs(cli::help_text(it->second).c_str(), stdout);
            return 0;
        }
        return it->second.run(args);
    } catch (const Error& e) {
        std::fprintf(stderr, "loradeskd %s: error: %s\n", name.c_str(), e.what());
        return e.code() == ErrorCode::invalid_argument ? 2 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loradeskd %s: internal error: %s\n", name.c_str(), e.what());
        return 1;
    }
}
