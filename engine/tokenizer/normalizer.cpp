// Normalizer steps applied to each span of input text between added tokens.
#include "tokenizer/normalizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace loradesk::tokenizer {

using nlohmann::json;

std::shared_ptr<PcreRegex> pattern_from_json(const json& pattern, const char* where) {
    if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
        return std::make_shared<PcreRegex>(pcre_escape(pattern["String"].get<std::string>()));
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
        return std::make_shared<PcreRegex>(pattern["Regex"].get<std::string>());
    throw_expected(ErrorCode::corrupt_file, std::string("tokenizer.json: ") + where +
                                                " needs \"pattern\": {\"String\": ...} or {\"Regex\": ...}, got " +
                                                pattern.dump());
}

std::string replace_all(const PcreRegex& pattern, const std::string& text, const std::string& content) {
    auto matches = pattern.find_all(text);
    if (matches.empty()) return text;
    std::string out;
    out.reserve(text.size());
    std::size_t last = 0;
    for (auto [b, e] : matches) {
        out.append(text, last, b - last);
        out += content;
        last = e;
    }
    out.append(text, last, std::string::npos);
    return out;
}

namespace {

std::string string_field(const json& j, const char* key, const char* where) {
    if (!j.contains(key) || !j[key].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       std::string("tokenizer.json: ") + where + " needs a string field \"" + key + "\"");
    return j[key].get<std::string>();
}

}  // namespace

void Normalizer::add_steps(const json& c, std::vector<Step>& steps) {
    if (c.is_null()) return;
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       "tokenizer.json: normalizer must be an object with a \"type\", got " + c.dump());
    const std::string type = c["type"];
    if (type == "Sequence") {
        if (!c.contains("normalizers") || !c["normalizers"].is_array())
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer.json: Sequence normalizer needs a \"normalizers\" array");
        for (auto& n : c["normalizers"]) add_steps(n, steps);
    } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        Step s;
        s.kind = Kind::unicode;
        s.form = type == "NFC"    ? NormalForm::nfc
                 : type == "NFD"  ? NormalForm::nfd
                 : type == "NFKC" ? NormalForm::nfkc
                                  : NormalForm::nfkd;
        steps.push_back(std::move(s));
    } else if (type == "Lowercase") {
        steps.push_back(step_of(Kind::lowercase));
    } else if (type == "Strip") {
        Step s;
        s.kind = Kind::strip;
        s.strip_left = c.value("strip_left", true);
        s.strip_right = c.value("strip_right", true);
        steps.push_back(std::move(s));
    } else if (type == "Prepend") {
        Step s;
        s.kind = Kind::prepend;
        s.text = string_field(c, "prepend", "Prepend normalizer");
        steps.push_back(std::move(s));
    } else if (type == "Replace") {
        Step s;
        s.kind = Kind::replace;
        s.pattern = pattern_from_json(c.value("pattern", json()), "Replace normalizer");
        s.text = string_field(c, "content", "Replace normalizer");
        steps.push_back(std::move(s));
    } else {
        throw_expected(
            ErrorCode::unsupported,
            "tokenizer.json: normalizer type '" + type +
                "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace, Sequence)");
    }
}

Normalizer Normalizer::from_json(const json& config) {
    Normalizer n;
    add_steps(config, n.m_steps);
    return n;
}

std::string Normalizer::normalize(std::string text) const {
    for (const Step& s : m_steps) {
        switch (s.kind) {
            case Kind::unicode:
                text = normalize_unicode(text, s.form);
                break;
            case Kind::lowercase:
                text = to_lower_unicode(text);
                break;
            case Kind::strip: {
                std::size_t b = 0, e = text.size();
                if (s.strip_left) {
                    while (b < e) {
                        std::size_t p = b;
                        if (!is_unicode_whitespace(next_code_point(text, p))) break;
                        b = p;
                    }
                }
                if (s.strip_right) {
                    while (e > b) {
                        std::size_t start = e - 1;
                        while (start > b && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
                        std::size_t p = start;
                        if (!is_unicode_whitespace(next_code_point(text, p))) break;
                        e = start;
                    }
                }
                text = text.substr(b, e - b);
                break;
            }
            case Kind::prepend:
                // HF prepends only to non-empty text, so empty spans stay empty.
                if (!text.empty()) text = s.text + text;
                break;
            case Kind::replace:
                text = replace_all(*s.pattern, text, s.text);
                break;
        }
    }
    return text;
}

}  // namespace loradesk::tokenizer
