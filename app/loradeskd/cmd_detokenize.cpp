// loradeskd detokenize: token ids -> text with a model's tokenizer (HF `decode` semantics); --incremental
// shows the streaming deltas the server would send, --batch serves the tokenizer oracle tests.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

using loradesk::ErrorCode;
using loradesk::throw_expected;
using loradesk::tokenizer::Tokenizer;

void check_ids(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    for (int32_t id : ids)
        if (!tok.is_known_id(id))
            throw_expected(ErrorCode::invalid_argument, "token id " + std::to_string(id) +
                                                            " is not in this tokenizer (ids go up to " +
                                                            std::to_string(tok.vocab_size() - 1) + ")");
}

nlohmann::json deltas(const std::shared_ptr<Tokenizer>& tok, const std::vector<int32_t>& ids, bool skip_special) {
    loradesk::tokenizer::IncrementalDetokenizer detok(tok, skip_special);
    nlohmann::json out = nlohmann::json::array();
    for (int32_t id : ids) out.push_back(detok.push(id));
    out.push_back(detok.finish());
    return out;
}

std::vector<std::vector<int32_t>> read_batch(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_expected(ErrorCode::not_found, "cannot read '" + path + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    try {
        return nlohmann::json::parse(ss.str()).get<std::vector<std::vector<int32_t>>>();
    } catch (const nlohmann::json::exception& e) {
        throw_expected(ErrorCode::invalid_argument,
                       "--batch file must be a JSON array of id arrays: " + std::string(e.what()));
    }
}

int run_detokenize(const loradesk::cli::Args& args) {
    auto tok = Tokenizer::load(loradesk::cli::model_folder(args, "tokenizer"));
    const bool skip = args.flag("skip-special"), incremental = args.flag("incremental");
    if (args.has("batch") == args.has("ids"))
        throw_expected(ErrorCode::invalid_argument, "give exactly one of --ids or --batch");
    if (args.has("batch")) {
        nlohmann::json out = nlohmann::json::array();
        for (auto& ids : read_batch(args.get("batch"))) {
            check_ids(*tok, ids);
            if (incremental)
                out.push_back({{"text", tok->decode(ids, skip)}, {"deltas", deltas(tok, ids, skip)}});
            else
                out.push_back(tok->decode(ids, skip));
        }
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::vector<int32_t> ids;
    for (int id : loradesk::cli::parse_int_list(args.get("ids"), "ids")) ids.push_back(id);
    check_ids(*tok, ids);
    if (incremental) {
        std::printf("%s\n", deltas(tok, ids, skip).dump().c_str());
        return 0;
    }
    std::string text = tok->decode(ids, skip);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (!args.flag("no-newline")) std::fputc('\n', stdout);
    return 0;
}

}  // namespace

LORADESK_COMMAND({
    "detokenize",
    "Turn token ids back into text with a model's tokenizer",
    "loradeskd detokenize --tokenizer DIR (--ids 1,2,3 | --batch F.json) [--skip-special] [--incremental] "
    "[--no-newline]",
    {
        {"tokenizer", "DIR|ORG/NAME",
         "folder with tokenizer.json (and tokenizer_config.json), or a Hub id in the Hugging Face cache"},
        {"ids", "1,2,3", "comma-separated token ids"},
        {"batch", "F.json",
         "JSON array of id arrays; prints a JSON array of texts ({text, deltas} with --incremental)"},
        {"skip-special", "", "leave out special tokens (BOS, EOS, chat markers)"},
        {"incremental", "", "stream the ids one by one and print the JSON array of text deltas (last: the flush)"},
        {"no-newline", "", "do not print a newline after the text"},
    },
    run_detokenize,
});
