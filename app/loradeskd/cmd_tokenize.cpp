// loradeskd tokenize: text -> token ids with a model's tokenizer (HF `encode` semantics), for scripts
// and the tokenizer oracle tests.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "tokenizer/tokenizer.h"

namespace {

using loradesk::ErrorCode;
using loradesk::throw_expected;

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_expected(ErrorCode::not_found, "cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string ids_json(const std::vector<int32_t>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
}

int run_tokenize(const loradesk::cli::Args& args) {
    auto tok = loradesk::tokenizer::Tokenizer::load(loradesk::cli::model_folder(args, "tokenizer"));
    const bool special = !args.flag("no-special");
    int sources = int(args.has("text")) + int(args.has("text-file")) + int(args.has("batch"));
    if (sources != 1) throw_expected(ErrorCode::invalid_argument, "give exactly one of --text, --text-file or --batch");
    if (args.has("batch")) {
        nlohmann::json batch;
        try {
            batch = nlohmann::json::parse(read_text_file(args.get("batch")));
        } catch (const nlohmann::json::exception& e) {
            throw_expected(ErrorCode::invalid_argument, "--batch file is not valid JSON: " + std::string(e.what()));
        }
        if (!batch.is_array())
            throw_expected(ErrorCode::invalid_argument, "--batch file must hold a JSON array of strings");
        std::string out = "[";
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (!batch[i].is_string())
                throw_expected(ErrorCode::invalid_argument, "--batch item " + std::to_string(i) + " is not a string");
            out += (i ? ",\n" : "") + ids_json(tok->encode(batch[i].get<std::string>(), special));
        }
        std::printf("%s]\n", out.c_str());
        return 0;
    }
    std::string text = args.has("text") ? args.get("text") : read_text_file(args.get("text-file"));
    auto ids = tok->encode(text, special);
    if (args.flag("json")) {
        std::printf("{\"ids\":%s}\n", ids_json(ids).c_str());
    } else {
        for (std::size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
        std::printf("\n");
    }
    return 0;
}

}  // namespace

LORADESK_COMMAND({
    "tokenize",
    "Turn text into token ids with a model's tokenizer",
    "loradeskd tokenize --tokenizer DIR (--text T | --text-file F | --batch F.json) [--no-special] [--json]",
    {
        {"tokenizer", "DIR|ORG/NAME",
         "folder with tokenizer.json (and tokenizer_config.json), usually the model folder; or a Hub id in the Hugging "
         "Face cache"},
        {"text", "T", "text to tokenize"},
        {"text-file", "F", "read the text from a file (bytes as they are)"},
        {"batch", "F.json", "JSON array of strings; prints a JSON array of id arrays"},
        {"no-special", "", "do not add special tokens (BOS etc.) around the text"},
        {"json", "", "print {\"ids\":[...]} instead of space-separated ids"},
    },
    run_tokenize,
});
