// Pre-tokenizer steps, each mapping a list of spans to a finer list of spans.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

using nlohmann::json;

namespace {

// GPT-2's pre-tokenization pattern, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

SplitBehavior parse_behavior(const json& c) {
    std::string b = c.value("behavior", std::string("Isolated"));
    if (b == "Removed") return SplitBehavior::removed;
    if (b == "Isolated") return SplitBehavior::isolated;
    if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
    if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
    if (b == "Contiguous") return SplitBehavior::contiguous;
    throw_expected(ErrorCode::corrupt_file, "tokenizer.json: Split behavior '" + b +
                                                "' is unknown (expected Removed, Isolated, MergedWithPrevious, "
                                                "MergedWithNext or Contiguous)");
}

}  // namespace

std::vector<std::string> split_with_behavior(const std::string& text,
                                             const std::vector<std::pair<std::size_t, std::size_t>>& matches,
                                             SplitBehavior behavior, bool invert) {
    struct Seg {
        std::size_t b, e;
        bool is_match;
    };
    std::vector<Seg> segs;
    std::size_t last = 0;
    for (auto [b, e] : matches) {
        if (b > last) segs.push_back({last, b, invert});
        segs.push_back({b, e, !invert});
        last = e;
    }
    if (last < text.size()) segs.push_back({last, text.size(), invert});

    std::vector<std::pair<std::size_t, std::size_t>> out;
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::removed:
            for (auto& s : segs)
                if (!s.is_match) out.emplace_back(s.b, s.e);
            break;
        case SplitBehavior::isolated:
            for (auto& s : segs) out.emplace_back(s.b, s.e);
            break;
        case SplitBehavior::merged_with_previous:
            for (auto& s : segs) {
                if (s.is_match && !previous_match && !out.empty())
                    out.back().second = s.e;
                else
                    out.emplace_back(s.b, s.e);
                previous_match = s.is_match;
            }
            break;
        case SplitBehavior::merged_with_next:
            for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
                if (it->is_match && !previous_match && !out.empty())
                    out.back().first = it->b;
                else
                    out.emplace_back(it->b, it->e);
                previous_match = it->is_match;
            }
            std::reverse(out.begin(), out.end());
            break;
        case SplitBehavior::contiguous:
            for (std::size_t i = 0; i < segs.size(); ++i) {
                if (i > 0 && segs[i].is_match == previous_match)
                    out.back().second = segs[i].e;
                else
                    out.emplace_back(segs[i].b, segs[i].e);
                previous_match = segs[i].is_match;
            }
            break;
    }
    std::vector<std::string> pieces;
    pieces.reserve(out.size());
    for (auto [b, e] : out)
        if (e > b) pieces.emplace_back(text.substr(b, e - b));
    return pieces;
}

void PreTokenizer::add_steps(const json& c, std::vector<Step>& steps) {
    if (c.is_null()) return;
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       "tokenizer.json: pre_tokenizer must be an object with a \"type\", got " + c.dump());
    const std::string type = c["type"];
    if (type == "Sequence") {
        if (!c.contains("pretokenizers") || !c["pretokenizers"].is_array())
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer.json: Sequence pre_tokenizer needs a \"pretokenizers\" array");
        for (auto& p : c["pretokenizers"]) add_steps(p, steps);
    } else if (type == "Split") {
        Step s;
        s.kind = Kind::split;
        s.pattern = pattern_from_json(c.value("pattern", json()), "Split pre_tokenizer");
        s.behavior = parse_behavior(c);
        s.invert = c.value("invert", false);
        steps.push_back(std::move(s));
    } else if (type == "ByteLevel") {
        Step s;
        s.kind = Kind::byte_level;
        s.add_prefix_space = c.value("add_prefix_space", true);
        if (c.value("use_regex", true)) s.pattern = std::make_shared<PcreRegex>(kGpt2Pattern);
        steps.push_back(std::move(s));
    } else if (type == "Metaspace") {
        Step s;
        s.kind = Kind::metaspace;
        s.replacement = c.value("replacement", std::string("\xE2\x96\x81"));
        if (s.replacement.empty() || find_invalid_utf8(s.replacement) != std::string::npos)
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: Metaspace replacement must be one character");
        std::string scheme = c.contains("prepend_scheme") && c["prepend_scheme"].is_string()
                                 ? c["prepend_scheme"].get<std::string>()
                                 : (c.value("add_prefix_space", true) ? "always" : "never");
        if (scheme == "first")
            s.prepend = PrependScheme::first;
        else if (scheme == "always")
            s.prepend = PrependScheme::always;
        else if (scheme == "never")
            s.prepend = PrependScheme::never;
        else
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: Metaspace prepend_scheme '" + scheme +
                                                        "' is unknown (first, always, never)");
        s.metaspace_split = c.value("split", true);
        s.pattern = std::make_shared<PcreRegex>(pcre_escape(s.replacement));
        steps.push_back(std::move(s));
    } else if (type == "Digits") {
        Step s;
        s.kind = Kind::digits;
        s.pattern = std::make_shared<PcreRegex>(c.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
        steps.push_back(std::move(s));
    } else if (type == "WhitespaceSplit") {
        Step s;
        s.kind = Kind::split;
        s.pattern = std::make_shared<PcreRegex>(R"(\s+)");
        s.behavior = SplitBehavior::removed;
        steps.push_back(std::move(s));
    } else if (type == "Whitespace") {
        Step s;
        s.kind = Kind::split;
        s.pattern = std::make_shared<PcreRegex>(R"(\w+|[^\w\s]+)");
        s.behavior = SplitBehavior::removed;
        s.invert = true;
        steps.push_back(std::move(s));
    } else {
        throw_expected(ErrorCode::unsupported,
                       "tokenizer.json: pre_tokenizer type '" + type +
                           "' is not supported (supported: Split, ByteLevel, Metaspace, Digits, Whitespace, "
                           "WhitespaceSplit, Sequence)");
    }
}

PreTokenizer PreTokenizer::from_json(const json& config) {
    PreTokenizer p;
    add_steps(config, p.m_steps);
    return p;
}

void PreTokenizer::apply(const Step& s, std::vector<PreToken>& pieces) {
    std::vector<PreToken> next;
    next.reserve(pieces.size() * 2);
    auto push_split = [&](const PreToken& piece, std::vector<std::string> parts) {
        for (std::size_t i = 0; i < parts.size(); ++i) next.push_back({std::move(parts[i]), piece.at_start && i == 0});
    };
    for (PreToken& piece : pieces) {
        switch (s.kind) {
            case Kind::split:
                push_split(piece,
                           split_with_behavior(piece.text, s.pattern->find_all(piece.text), s.behavior, s.invert));
                break;
            case Kind::digits:
                push_split(piece, split_with_behavior(piece.text, s.pattern->find_all(piece.text),
                                                      SplitBehavior::isolated, false));
                break;
            case Kind::byte_level: {
                if (s.add_prefix_space && piece.text.rfind(' ', 0) != 0) piece.text.insert(0, 1, ' ');
                std::vector<std::string> parts;
                if (s.pattern)
                    parts = split_with_behavior(piece.text, s.pattern->find_all(piece.text), SplitBehavior::isolated,
                                                false);
                else if (!piece.text.empty())
                    parts.push_back(std::move(piece.text));
                const auto& table = byte_to_unicode_table();
                for (auto& part : parts) {
                    std::string mapped;
                    mapped.reserve(part.size() * 2);
                    for (unsigned char b : part) mapped += table[b];
                    part = std::move(mapped);
                }
                push_split(piece, std::move(parts));
                break;
            }
            case Kind::metaspace: {
                std::string text;
                text.reserve(piece.text.size() + 3);
                for (char c : piece.text) {
                    if (c == ' ')
                        text += s.replacement;
                    else
                        text += c;
                }
                bool prepend =
                    s.prepend == PrependScheme::always || (s.prepend == PrependScheme::first && piece.at_start);
                if (prepend && text.rfind(s.replacement, 0) != 0) text.insert(0, s.replacement);
                if (s.metaspace_split) {
                    push_split(piece, split_with_behavior(text, s.pattern->find_all(text),
                                                          SplitBehavior::merged_with_next, false));
                } else if (!text.empty()) {
                    next.push_back({std::move(text), piece.at_start});
                }
                break;
            }
        }
    }
    pieces = std::move(next);
}

void PreTokenizer::pre_tokenize(PreToken piece, std::vector<PreToken>& out) const {
    if (m_steps.empty()) {
        if (!piece.text.empty()) out.push_back(std::move(piece));
        return;
    }
    std::vector<PreToken> pieces{std::move(piece)};
    for (const Step& s : m_steps) apply(s, pieces);
    for (auto& p : pieces) out.push_back(std::move(p));
}

}  // namespace loradesk::tokenizer
