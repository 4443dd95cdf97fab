// Deterministic BPE training over a fixed text; see synth_tokenizer.h.
#include "model/synth_tokenizer.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace loradesk::model {
namespace {

using json = nlohmann::json;

constexpr const char* kCorpus =
    "The quick brown fox jumps over the lazy dog. A local server answers questions from many users, and "
    "each user may ask for a different adapter. The engine keeps one base model in memory and applies "
    "small low-rank updates to the weights of the attention and the feed-forward layers. When the batch "
    "holds requests for several adapters, the tokens are grouped by adapter so that every group is "
    "computed together. The cache stores the keys and values of the prompt, and a later request with the "
    "same prefix can reuse them instead of computing them again. The scheduler decides which requests run "
    "in the next step, how many tokens of each prompt are processed, and when a request has to wait. "
    "Hello, world! How are you today? I am fine, thank you. What is the weather like in the city? It is "
    "sunny and warm, with a light wind from the west. Numbers such as 1, 2, 3, 10, 42 and 2024 appear in "
    "text too. Please write a short story about a robot who learns to paint. Once upon a time there was "
    "a robot that lived in a small house near the sea. Every morning it watched the sun rise over the "
    "water, and every evening it tried to remember the colours. The robot said: \"I want to paint the "
    "sea.\" Its friend the cat answered: \"Then you should start today, not tomorrow.\" def main():\n"
    "    print(\"hello\")\n    return 0\n\nfor i in range(10):\n    total += i\n";

// GPT-2 byte order: printable bytes keep their code point, the other 68 map to U+0100 + k.
std::vector<int> byte_code_points() {
    std::vector<int> cp(256, -1);
    for (int b = 0x21; b <= 0x7e; ++b) cp[std::size_t(b)] = b;
    for (int b = 0xa1; b <= 0xac; ++b) cp[std::size_t(b)] = b;
    for (int b = 0xae; b <= 0xff; ++b) cp[std::size_t(b)] = b;
    int k = 0;
    for (int b = 0; b < 256; ++b)
        if (cp[std::size_t(b)] < 0) cp[std::size_t(b)] = 256 + k++;
    return cp;
}

std::string utf8(int cp) {
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else {
        s += char(0xc0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3f));
    }
    return s;
}

// Words as the Qwen pre-tokenizer would roughly cut them: optional leading space + letters, single
// digits, optional space + punctuation run, newline runs. Close enough for learning merges.
std::vector<std::string> rough_words(const std::string& text) {
    std::vector<std::string> out;
    auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t j = i;
        if (text[j] == ' ' && j + 1 < text.size() && text[j + 1] != ' ') ++j;
        if (letter(text[j])) {
            while (j < text.size() && letter(text[j])) ++j;
        } else if (text[j] >= '0' && text[j] <= '9') {
            ++j;
        } else if (text[j] == '\n' || text[j] == ' ') {
            const char c = text[j];
            while (j < text.size() && text[j] == c) ++j;
        } else {
            while (j < text.size() && !letter(text[j]) && text[j] != ' ' && text[j] != '\n' &&
                   !(text[j] >= '0' && text[j] <= '9'))
                ++j;
        }
        if (j == i) ++j;
        out.push_back(text.substr(i, j - i));
        i = j;
    }
    return out;
}

}  // namespace

std::string byte_level_char(unsigned char byte) {
    static const std::vector<int> cp = byte_code_points();
    return utf8(cp[byte]);
}

SynthTokenizer make_synth_tokenizer(int n_merges) {
    // Byte tokens first, in GPT-2 order (by code point), as real byte-level vocabularies are.
    std::vector<std::pair<int, int>> by_cp;
    const std::vector<int> cps = byte_code_points();
    for (int b = 0; b < 256; ++b) by_cp.push_back({cps[std::size_t(b)], b});
    std::sort(by_cp.begin(), by_cp.end());
    json vocab = json::object();
    int next_id = 0;
    for (auto [cp, b] : by_cp) vocab[utf8(cp)] = next_id++;

    std::map<std::vector<std::string>, int> words;  // word as symbols -> frequency
    for (const std::string& w : rough_words(kCorpus)) {
        std::vector<std::string> syms;
        for (unsigned char c : w) syms.push_back(byte_level_char(c));
        ++words[syms];
    }
    json merges = json::array();
    for (int m = 0; m < n_merges; ++m) {
        std::map<std::pair<std::string, std::string>, int> pairs;
        for (const auto& [syms, freq] : words)
            for (std::size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += freq;
        const std::pair<std::string, std::string>* best = nullptr;
        int best_count = 0;
        for (const auto& [pair, count] : pairs)  // ordered map: ties go to the smallest pair
            if (count > best_count) best = &pair, best_count = count;
        if (!best) break;
        const auto [a, b] = *best;
        merges.push_back(json::array({a, b}));
        if (!vocab.contains(a + b)) vocab[a + b] = next_id++;
        std::map<std::vector<std::string>, int> merged;
        for (const auto& [syms, freq] : words) {
            std::vector<std::string> out;
            for (std::size_t i = 0; i < syms.size(); ++i) {
                if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
                    out.push_back(a + b);
                    ++i;
                } else {
                    out.push_back(syms[i]);
                }
            }
            merged[out] += freq;
        }
        words = std::move(merged);
    }

    SynthTokenizer t;
    json added = json::array();
    json added_decoder = json::object();
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        json tok = {{"id", next_id},   {"content", special},  {"single_word", false}, {"lstrip", false},
                    {"rstrip", false}, {"normalized", false}, {"special", true}};
        added.push_back(tok);
        added_decoder[std::to_string(next_id)] = {{"content", special}, {"lstrip", false},      {"normalized", false},
                                                  {"rstrip", false},    {"single_word", false}, {"special", true}};
        ++next_id;
    }
    t.bos_id = next_id - 3;
    t.eos_id = next_id - 1;
    t.n_tokens = next_id;
    const json byte_level = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    t.tokenizer = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern",
              {{"Regex",
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level}}}},
        {"post_processor", byte_level},
        {"decoder", byte_level},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", merges}}}};
    t.tokenizer_config = {
        {"add_bos_token", false},
        {"add_prefix_space", false},
        {"added_tokens_decoder", added_decoder},
        {"additional_special_tokens", {"<|im_start|>", "<|im_end|>"}},
        {"bos_token", nullptr},
        {"chat_template",
         "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
         "'<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- "
         "endif %}"},
        {"clean_up_tokenization_spaces", false},
        {"eos_token", "<|im_end|>"},
        {"errors", "replace"},
        {"model_max_length", 32768},
        {"pad_token", "<|endoftext|>"},
        {"split_special_tokens", false},
        {"tokenizer_class", "Qwen2Tokenizer"},
        {"unk_token", nullptr}};
    return t;
}

}  // namespace loradesk::model
