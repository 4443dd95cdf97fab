// loradeskd detokenize: token ids -> text with a model's tokenizer (HF `decode` semantics).
#include <cstdio>

#include "cli.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace {

int run_detokenize(const loradesk::cli::Args& args) {
    auto tok = loradesk::tokenizer::Tokenizer::load(args.require("tokenizer"));
    std::vector<int32_t> ids;
    for (int id : loradesk::cli::parse_int_list(args.require("ids"), "ids")) {
        if (!tok->is_known_id(id))
            loradesk::throw_expected(loradesk::ErrorCode::invalid_argument,
                                     "token id " + std::to_string(id) + " is not in this tokenizer (ids go up to " +
                                         std::to_string(tok->vocab_size() - 1) + ")");
        ids.push_back(id);
    }
    std::string text = tok->decode(ids, args.flag("skip-special"));
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (!args.flag("no-newline")) std::fputc('\n', stdout);
    return 0;
}

}  // namespace

LORADESK_COMMAND({
    "detokenize",
    "Turn token ids back into text with a model's tokenizer",
    "loradeskd detokenize --tokenizer DIR --ids 1,2,3 [--skip-special] [--no-newline]",
    {
        {"tokenizer", "DIR", "folder with tokenizer.json (and tokenizer_config.json)"},
        {"ids", "1,2,3", "comma-separated token ids"},
        {"skip-special", "", "leave out special tokens (BOS, EOS, chat markers)"},
        {"no-newline", "", "do not print a newline after the text"},
    },
    run_detokenize,
});
