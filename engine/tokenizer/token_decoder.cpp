// Decoder steps, mirroring HF tokenizers' decode_chain implementations.
#include "tokenizer/token_decoder.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

using nlohmann::json;

void TokenDecoder::add_steps(const json& c, std::vector<Step>& steps) {
    if (c.is_null()) return;
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       "tokenizer.json: decoder must be an object with a \"type\", got " + c.dump());
    const std::string type = c["type"];
    if (type == "Sequence") {
        if (!c.contains("decoders") || !c["decoders"].is_array())
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: Sequence decoder needs a \"decoders\" array");
        for (auto& d : c["decoders"]) add_steps(d, steps);
    } else if (type == "ByteLevel") {
        steps.push_back(step_of(Kind::byte_level));
    } else if (type == "ByteFallback") {
        steps.push_back(step_of(Kind::byte_fallback));
    } else if (type == "Fuse") {
        steps.push_back(step_of(Kind::fuse));
    } else if (type == "Metaspace") {
        Step s;
        s.kind = Kind::metaspace;
        s.replacement = c.value("replacement", std::string("\xE2\x96\x81"));
        std::string scheme = c.contains("prepend_scheme") && c["prepend_scheme"].is_string()
                                 ? c["prepend_scheme"].get<std::string>()
                                 : (c.value("add_prefix_space", true) ? "always" : "never");
        s.metaspace_strip_first = scheme != "never";
        steps.push_back(std::move(s));
    } else if (type == "Strip") {
        Step s;
        s.kind = Kind::strip;
        s.replacement = c.value("content", std::string(" "));
        s.strip_start = c.value("start", std::size_t(0));
        s.strip_stop = c.value("stop", std::size_t(0));
        steps.push_back(std::move(s));
    } else if (type == "Replace") {
        Step s;
        s.kind = Kind::replace;
        s.pattern = pattern_from_json(c.value("pattern", json()), "Replace decoder");
        if (!c.contains("content") || !c["content"].is_string())
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: Replace decoder needs a string \"content\"");
        s.replacement = c["content"].get<std::string>();
        steps.push_back(std::move(s));
    } else {
        throw_expected(ErrorCode::unsupported, "tokenizer.json: decoder type '" + type +
                                                   "' is not supported (supported: ByteLevel, Metaspace, ByteFallback, "
                                                   "Fuse, Strip, Replace, Sequence)");
    }
}

TokenDecoder TokenDecoder::from_json(const json& config) {
    TokenDecoder d;
    d.m_has_decoder = !config.is_null();
    add_steps(config, d.m_steps);
    return d;
}

namespace {

void decode_byte_level(std::vector<std::string>& tokens) {
    // Map every token back to bytes; a token with a char outside the table (an added token) keeps its
    // own bytes. All bytes are decoded together, so characters split across tokens join up.
    std::string bytes;
    for (const std::string& t : tokens) {
        std::size_t start = bytes.size();
        std::size_t i = 0;
        bool ok = true;
        while (i < t.size()) {
            int b = unicode_to_byte(next_code_point(t, i));
            if (b < 0) {
                ok = false;
                break;
            }
            bytes += char(b);
        }
        if (!ok) {
            bytes.resize(start);
            bytes += t;
        }
    }
    tokens.assign(1, utf8_lossy(bytes));
}

int byte_token_value(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    auto hex = [](char c) {
        return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
    };
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void decode_byte_fallback(std::vector<std::string>& tokens) {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
        if (pending.empty()) return;
        // HF: a run of byte tokens that is not valid UTF-8 becomes one U+FFFD per byte.
        if (find_invalid_utf8(pending) == std::string::npos)
            out.push_back(pending);
        else
            for (std::size_t i = 0; i < pending.size(); ++i) out.emplace_back(kReplacementChar);
        pending.clear();
    };
    for (std::string& t : tokens) {
        int b = byte_token_value(t);
        if (b >= 0) {
            pending += char(b);
            continue;
        }
        flush();
        out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
}

}  // namespace

void TokenDecoder::apply(const Step& s, std::vector<std::string>& tokens) {
    switch (s.kind) {
        case Kind::byte_level:
            decode_byte_level(tokens);
            break;
        case Kind::byte_fallback:
            decode_byte_fallback(tokens);
            break;
        case Kind::fuse: {
            std::string all;
            for (auto& t : tokens) all += t;
            tokens.assign(1, std::move(all));
            break;
        }
        case Kind::metaspace:
            for (std::size_t i = 0; i < tokens.size(); ++i) {
                std::string out;
                const std::string& t = tokens[i];
                // HF drops every replacement char of the first token (not only the leading one).
                for (std::size_t p = 0; p < t.size();) {
                    if (t.compare(p, s.replacement.size(), s.replacement) == 0) {
                        if (!(i == 0 && s.metaspace_strip_first)) out += ' ';
                        p += s.replacement.size();
                    } else {
                        out += t[p++];
                    }
                }
                tokens[i] = std::move(out);
            }
            break;
        case Kind::strip:
            for (std::string& t : tokens) {
                std::size_t b = 0, e = t.size();
                for (std::size_t k = 0;
                     k < s.strip_start && t.compare(b, s.replacement.size(), s.replacement) == 0 && b < e; ++k)
                    b += s.replacement.size();
                for (std::size_t k = 0; k < s.strip_stop && e >= b + s.replacement.size() &&
                                        t.compare(e - s.replacement.size(), s.replacement.size(), s.replacement) == 0;
                     ++k)
                    e -= s.replacement.size();
                t = t.substr(b, e - b);
            }
            break;
        case Kind::replace:
            for (std::string& t : tokens) t = replace_all(*s.pattern, t, s.replacement);
            break;
    }
}

std::string TokenDecoder::token_bytes(const std::string& token) const {
    if (!m_has_decoder) return token;
    std::string t = token;
    for (const Step& s : m_steps) {
        switch (s.kind) {
            case Kind::byte_level: {
                std::string bytes;
                std::size_t i = 0;
                while (i < t.size()) {
                    const int b = unicode_to_byte(next_code_point(t, i));
                    if (b < 0) return t;  // not a byte-level token (an added token keeps its own text)
                    bytes += char(b);
                }
                t = std::move(bytes);
                break;
            }
            case Kind::byte_fallback:
                if (int b = byte_token_value(t); b >= 0) t = std::string(1, char(b));
                break;
            case Kind::metaspace: {
                std::string out;
                for (std::size_t p = 0; p < t.size();) {
                    if (t.compare(p, s.replacement.size(), s.replacement) == 0) {
                        out += ' ';
                        p += s.replacement.size();
                    } else {
                        out += t[p++];
                    }
                }
                t = std::move(out);
                break;
            }
            case Kind::replace:
                t = replace_all(*s.pattern, t, s.replacement);
                break;
            case Kind::fuse:
            case Kind::strip:
                break;
        }
    }
    return t;
}

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
    if (!m_has_decoder) {
        std::string out;
        for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
        return out;
    }
    for (const Step& s : m_steps) apply(s, tokens);
    std::string out;
    for (auto& t : tokens) out += t;
    return out;
}

}  // namespace loradesk::tokenizer
