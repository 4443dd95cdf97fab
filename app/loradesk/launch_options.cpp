// Command line + settings + demo kit → engine options.
#include "launch_options.h"

#include <filesystem>

#include "core/error.h"
#include "demo_kit.h"

namespace loradesk::app {

std::vector<cli::OptionSpec> launchOptionSpecs() {
    auto specs = cli::engine_option_specs();
    specs.push_back({"headless", "", "serve without a window (also implied when there is no display)"});
    specs.push_back({"version", "", "print the version and exit"});
    return specs;
}

LaunchOptions parseLaunchOptions(const cli::Args& args) {
    LaunchOptions l;
    l.serve = cli::serve_options_from_args(args);
    l.headless = args.flag("headless");
    l.forceDemo = args.flag("demo");
    l.explicitModel = args.has("model") || l.forceDemo;
    l.modelReference = args.get("model");
    for (const char* o : {"device", "max-loras", "max-loras-cpu", "max-lora-rank", "kv-memory", "fp8-weight-only"})
        l.explicitLimits = l.explicitLimits || args.has(o);
    for (const char* o : {"host", "port", "api-key", "api-key-file"})
        l.explicitServer = l.explicitServer || args.has(o);
    return l;
}

std::string resolveModel(LaunchOptions& launch, const ui::AppSettings& settings) {
    api::EngineOptions& e = launch.serve.engine;
    if (!launch.forceDemo) settings.applyTo(e, launch.explicitModel, launch.explicitLimits);
    if (!launch.explicitServer) {
        launch.serve.host = settings.host.toStdString();
        launch.serve.port = settings.port;
        launch.serve.api_key = settings.apiKey.toStdString();
    }
    if (!launch.forceDemo && !e.model_dir.empty()) {
        if (launch.explicitModel) return {};  // the command line's --model was resolved as it was parsed
        // A remembered Hub id is served from its snapshot, under its own name, as on the command line.
        try {
            cli::resolve_model_reference(e);
        } catch (const Error& err) {
            return err.what();
        }
        return {};
    }
    const auto kit = cli::find_demo_kit();
    if (!kit)
        return "no model to serve: pass --model DIR (a Hugging Face folder with config.json and safetensors) or "
               "--model org/name (a model in the Hugging Face cache; `loradeskd pull org/name` fetches one), or set "
               "LORADESK_DEMO_DIR to the demo kit";
    e.model_dir = kit->model_dir;
    for (const auto& named : kit->adapters) e.named_adapters.push_back(named);
    // The server may load adapters from the kit's folder (load_lora_adapter), as for `loradeskd serve`.
    if (!kit->adapters.empty())
        launch.serve.extra_adapter_roots.push_back(
            std::filesystem::path(kit->adapters.front().second).parent_path().string());
    launch.serve.demo = true;
    return {};
}

bool needsFirstRunChoice(const LaunchOptions& launch, const QSettings& store) {
    if (launch.explicitModel || launch.headless) return false;
    if (qEnvironmentVariableIntValue("LORADESK_NO_FIRST_RUN") == 1) return false;
    return !store.contains(QStringLiteral("engine/model"));
}

}  // namespace loradesk::app
