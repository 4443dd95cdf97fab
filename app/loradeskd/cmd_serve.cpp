// loradeskd serve: the engine behind the OpenAI-compatible HTTP port, until SIGINT/SIGTERM.
#include <chrono>
#include <cstdio>

#include "cli.h"
#include "core/error.h"
#include "core/log.h"
#include "engine_cli.h"
#include "serve_runtime.h"

namespace {

using namespace loradesk;

int run_serve(const cli::Args& args) {
    if (args.has("log-level")) {
        log::Level level;
        if (!log::parse_level(args.get("log-level"), &level))
            throw_expected(ErrorCode::invalid_argument, "--log-level must be trace, debug, info, warn or error");
        log::set_level(level);
    }
    cli::ServeOptions options = cli::serve_options_from_args(args);
    cli::resolve_default_model(options);

    const sigset_t signals = cli::block_stop_signals();  // before any thread starts
    cli::ServerHost host(options);
    std::printf("loradeskd: listening on %s\n", host.address().c_str());
    std::fflush(stdout);
    cli::serve_until_stop_signal(host, signals, std::chrono::seconds(options.shutdown_timeout_s));
    return 0;
}

LORADESK_COMMAND({"serve", "serve the model and its adapters on an OpenAI-compatible HTTP port",
                  "loradeskd serve [--model DIR] [--adapters DIR]... [--host 127.0.0.1] [--port 8080] [options]",
                  cli::engine_option_specs(), &run_serve});

}  // namespace
