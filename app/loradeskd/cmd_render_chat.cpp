// loradeskd render-chat: renders a model's chat template over a messages file and prints the prompt
// byte for byte (no trailing newline added), for checking templates against transformers.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "tokenizer/jinja/chat_template.h"

namespace {

using namespace loradesk;

nlohmann::ordered_json read_json_file(const std::string& path, const char* option) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw_expected(ErrorCode::not_found, std::string("--") + option + ": cannot open '" + path + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    try {
        return nlohmann::ordered_json::parse(ss.str());
    } catch (const nlohmann::ordered_json::parse_error& e) {
        throw_expected(ErrorCode::invalid_argument,
                       std::string("--") + option + ": '" + path + "' is not valid JSON: " + e.what());
    }
}

int run(const cli::Args& args) {
    auto ct = jinja::ChatTemplate::from_model_dir(cli::model_folder(args, "tokenizer"));
    nlohmann::ordered_json messages = read_json_file(args.require("messages-file"), "messages-file");
    nlohmann::ordered_json tools =
        args.has("tools-file") ? read_json_file(args.get("tools-file"), "tools-file") : nlohmann::ordered_json();
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
    if (args.has("kwargs")) {
        try {
            kwargs = nlohmann::ordered_json::parse(args.get("kwargs"));
        } catch (const nlohmann::ordered_json::parse_error& e) {
            throw_expected(ErrorCode::invalid_argument, std::string("--kwargs is not valid JSON: ") + e.what());
        }
    }
    std::string prompt = ct.render(messages, tools, args.flag("add-generation-prompt"), kwargs);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace

LORADESK_COMMAND(
    {"render-chat",
     "render a chat template over messages (prints the prompt exactly)",
     "loradeskd render-chat --tokenizer DIR --messages-file F.json [--tools-file F.json] "
     "[--add-generation-prompt] [--kwargs JSON]",
     {{"tokenizer", "DIR|ORG/NAME",
       "directory with tokenizer_config.json and/or chat_template.jinja, or a Hub id in the Hugging Face cache"},
      {"messages-file", "FILE", "JSON array of OpenAI chat messages"},
      {"tools-file", "FILE", "JSON array of tool definitions (passed as `tools`)"},
      {"add-generation-prompt", "", "append the assistant turn header"},
      {"kwargs", "JSON", "extra template variables, e.g. '{\"enable_thinking\":false}'"}},
     run});
