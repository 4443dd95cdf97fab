// Tokenizer loading (tokenizer.json + tokenizer_config.json), the encode pipeline (added tokens ->
// normalizer -> pre-tokenizer -> BPE -> post-processor) and decode (tokens -> decoder -> clean-up).
#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "core/mapped_file.h"

namespace loradesk::tokenizer {

using nlohmann::json;

namespace {

json parse_json(std::string_view text, const std::string& what) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw_expected(ErrorCode::corrupt_file, what + " is not valid JSON: " + e.what());
    }
}

std::string read_file(const std::filesystem::path& path) { return read_text_file(path.string()); }

// tokenizer_config.json token values are a string, null, or {"__type":"AddedToken","content":...}.
std::string config_token(const json& config, const char* key) {
    if (!config.is_object() || !config.contains(key)) return {};
    const json& v = config[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return {};
}

AddedToken parse_added_token(const json& a, const std::string& where) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       where + ": every added token needs a string \"content\", got " + a.dump());
    AddedToken t;
    t.content = a["content"].get<std::string>();
    if (t.content.empty()) throw_expected(ErrorCode::corrupt_file, where + ": an added token has empty content");
    if (find_invalid_utf8(t.content) != std::string::npos)
        throw_expected(ErrorCode::corrupt_file, where + ": added token content is not valid UTF-8");
    t.special = a.value("special", false);
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    t.single_word = a.value("single_word", false);
    t.normalized = a.value("normalized", !t.special);
    return t;
}

}  // namespace

std::string clean_up_tokenization(std::string text) {
    static const std::pair<std::string_view, std::string_view> kRules[] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (auto [from, to] : kRules) {
        if (text.find(from) == std::string::npos) continue;
        std::string out;
        out.reserve(text.size());
        std::size_t last = 0, p;
        while ((p = text.find(from, last)) != std::string::npos) {
            out.append(text, last, p - last);
            out += to;
            last = p + from.size();
        }
        out.append(text, last, std::string::npos);
        text = std::move(out);
    }
    return text;
}

std::shared_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
    namespace fs = std::filesystem;
    fs::path tok_path = fs::path(dir) / "tokenizer.json";
    if (!fs::exists(tok_path))
        throw_expected(ErrorCode::not_found, "no tokenizer.json in '" + dir +
                                                 "' (loradesk needs the fast-tokenizer file; save the tokenizer with "
                                                 "transformers' save_pretrained to create it)");
    std::string tok_text = read_file(tok_path);
    fs::path cfg_path = fs::path(dir) / "tokenizer_config.json";
    std::string cfg_text = fs::exists(cfg_path) ? read_file(cfg_path) : std::string();
    return from_json_text(tok_text, cfg_text);
}

std::shared_ptr<Tokenizer> Tokenizer::from_json_text(std::string_view tokenizer_json, std::string_view config_json) {
    json tok = parse_json(tokenizer_json, "tokenizer.json");
    json config = config_json.empty() ? json::object() : parse_json(config_json, "tokenizer_config.json");
    if (!tok.is_object() || !tok.contains("model"))
        throw_expected(ErrorCode::corrupt_file,
                       "tokenizer.json has no \"model\" (is it a Hugging Face tokenizers file?)");
    if (!config.is_object()) throw_expected(ErrorCode::corrupt_file, "tokenizer_config.json must be a JSON object");
    std::shared_ptr<Tokenizer> t(new Tokenizer());
    t->m_model = BpeModel::from_json(std::as_const(tok)["model"]);
    t->m_normalizer = Normalizer::from_json(tok.value("normalizer", json()));
    t->m_pre_tokenizer = PreTokenizer::from_json(tok.value("pre_tokenizer", json()));
    t->m_decoder = TokenDecoder::from_json(tok.value("decoder", json()));
    t->load_added_tokens(tok, config);
    t->load_special_token_names(config);
    t->load_post_processor(tok.value("post_processor", json()), config);
    if (config.contains("clean_up_tokenization_spaces") && config["clean_up_tokenization_spaces"].is_boolean())
        t->m_clean_up_spaces = config["clean_up_tokenization_spaces"].get<bool>();
    return t;
}

void Tokenizer::load_added_tokens(const json& tok, const json& config) {
    std::vector<AddedToken> tokens;
    auto add = [&](AddedToken t) {
        if (m_added_by_id.count(t.id)) return;
        m_added_by_id.emplace(t.id, t);
        m_added_by_content.emplace(t.content, t.id);
        tokens.push_back(std::move(t));
    };
    if (tok.contains("added_tokens") && !tok["added_tokens"].is_null()) {
        if (!tok["added_tokens"].is_array())
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: added_tokens must be an array");
        for (auto& a : tok["added_tokens"]) {
            AddedToken t = parse_added_token(a, "tokenizer.json");
            if (!a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0)
                throw_expected(ErrorCode::corrupt_file,
                               "tokenizer.json: added token '" + t.content + "' needs a non-negative integer id");
            t.id = a["id"].get<int32_t>();
            add(std::move(t));
        }
    }
    // transformers also registers tokens that only tokenizer_config.json lists.
    if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
        for (auto& [key, a] : config["added_tokens_decoder"].items()) {
            AddedToken t = parse_added_token(a, "tokenizer_config.json");
            try {
                t.id = std::stoi(key);
            } catch (const std::exception&) {
                throw_expected(ErrorCode::corrupt_file,
                               "tokenizer_config.json: added_tokens_decoder key '" + key + "' is not an id");
            }
            add(std::move(t));
        }
    }
    std::vector<AddedToken> raw, normalized;
    std::vector<std::string> raw_patterns, normalized_patterns;
    for (auto& t : tokens) {
        if (t.normalized) {
            normalized_patterns.push_back(m_normalizer.normalize(t.content));
            normalized.push_back(t);
        } else {
            raw_patterns.push_back(t.content);
            raw.push_back(t);
        }
    }
    m_raw_matcher = AddedTokenMatcher(std::move(raw), raw_patterns);
    m_normalized_matcher = AddedTokenMatcher(std::move(normalized), normalized_patterns);
    m_vocab_size = m_model->vocab_size();
    for (auto& [id, t] : m_added_by_id) m_vocab_size = std::max(m_vocab_size, id + 1);
}

void Tokenizer::load_special_token_names(const json& config) {
    m_bos_token = config_token(config, "bos_token");
    m_eos_token = config_token(config, "eos_token");
    if (!m_bos_token.empty()) {
        m_bos_id = token_to_id(m_bos_token);
        if (!m_bos_id)
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer_config.json: bos_token '" + m_bos_token + "' is not a known token");
    }
    if (!m_eos_token.empty()) {
        m_eos_id = token_to_id(m_eos_token);
        if (!m_eos_id)
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer_config.json: eos_token '" + m_eos_token + "' is not a known token");
    }
}

void Tokenizer::load_post_processor(const json& post, const json& config) {
    if (post.is_null()) {
        // Slow-tokenizer style configs (Llama 2) state BOS/EOS in tokenizer_config.json instead.
        if (config.value("add_bos_token", false) && m_bos_id) m_prefix_ids.push_back(*m_bos_id);
        if (config.value("add_eos_token", false) && m_eos_id) m_suffix_ids.push_back(*m_eos_id);
        return;
    }
    if (!post.is_object() || !post.contains("type") || !post["type"].is_string())
        throw_expected(ErrorCode::corrupt_file, "tokenizer.json: post_processor must be an object with a \"type\"");
    const std::string type = post["type"];
    auto token_pair_id = [&](const json& p, const char* name) {
        if (!p.is_array() || p.size() != 2 || !p[1].is_number_integer())
            throw_expected(ErrorCode::corrupt_file,
                           std::string("tokenizer.json: ") + type + " needs \"" + name + "\": [token, id]");
        return p[1].get<int32_t>();
    };
    if (type == "Sequence") {
        for (auto& p : post.value("processors", json::array())) load_post_processor(p, config);
    } else if (type == "ByteLevel") {
        // Only adjusts offsets; ids are unchanged.
    } else if (type == "RobertaProcessing" || type == "BertProcessing") {
        std::vector<int32_t> prefix{token_pair_id(post.value("cls", json()), "cls")};
        m_prefix_ids.insert(m_prefix_ids.begin(), prefix.begin(), prefix.end());
        m_suffix_ids.push_back(token_pair_id(post.value("sep", json()), "sep"));
    } else if (type == "TemplateProcessing") {
        const json& single = post.value("single", json::array());
        const json& specials = post.value("special_tokens", json::object());
        std::vector<int32_t> prefix, suffix;
        bool seen_sequence = false;
        for (auto& piece : single) {
            if (piece.contains("Sequence")) {
                seen_sequence = true;
            } else if (piece.contains("SpecialToken")) {
                std::string name = piece["SpecialToken"].value("id", std::string());
                if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array())
                    throw_expected(ErrorCode::corrupt_file, "tokenizer.json: TemplateProcessing uses special token '" +
                                                                name + "' that is not in its special_tokens");
                auto& target = seen_sequence ? suffix : prefix;
                for (auto& id : specials[name]["ids"]) target.push_back(id.get<int32_t>());
            } else {
                throw_expected(ErrorCode::corrupt_file,
                               "tokenizer.json: TemplateProcessing piece " + piece.dump() + " is not understood");
            }
        }
        m_prefix_ids.insert(m_prefix_ids.begin(), prefix.begin(), prefix.end());
        m_suffix_ids.insert(m_suffix_ids.end(), suffix.begin(), suffix.end());
    } else {
        throw_expected(ErrorCode::unsupported, "tokenizer.json: post_processor type '" + type +
                                                   "' is not supported (supported: TemplateProcessing, ByteLevel, "
                                                   "RobertaProcessing, BertProcessing, Sequence)");
    }
}

void Tokenizer::encode_span(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
    std::string normalized = m_normalizer.normalize(std::string(text));
    std::vector<PreToken> pre;
    if (m_normalized_matcher.empty()) {
        m_pre_tokenizer.pre_tokenize({std::move(normalized), at_start}, pre);
    } else {
        for (const TextSplit& s : m_normalized_matcher.split(normalized)) {
            if (s.id >= 0) {
                for (auto& p : pre) m_model->tokenize(p.text, out);
                pre.clear();
                out.push_back(s.id);
                continue;
            }
            m_pre_tokenizer.pre_tokenize({normalized.substr(s.begin, s.end - s.begin), at_start && s.begin == 0}, pre);
        }
    }
    for (auto& p : pre) m_model->tokenize(p.text, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    if (std::size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
        throw_expected(ErrorCode::invalid_argument,
                       "text to tokenize is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")");
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + m_prefix_ids.size() + m_suffix_ids.size() + 1);
    if (add_special_tokens) ids.insert(ids.end(), m_prefix_ids.begin(), m_prefix_ids.end());
    if (m_raw_matcher.empty()) {
        encode_span(text, true, ids);
    } else {
        for (const TextSplit& s : m_raw_matcher.split(text)) {
            if (s.id >= 0)
                ids.push_back(s.id);
            else
                encode_span(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
        }
    }
    if (add_special_tokens) ids.insert(ids.end(), m_suffix_ids.begin(), m_suffix_ids.end());
    return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::string text = decode_raw(ids, skip_special_tokens);
    return m_clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

std::string Tokenizer::decode_raw(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (auto it = m_added_by_id.find(id); it != m_added_by_id.end()) {
            if (!(skip_special_tokens && it->second.special)) tokens.push_back(it->second.content);
            continue;
        }
        std::string_view t = m_model->id_to_token(id);
        if (!t.empty()) tokens.emplace_back(t);
    }
    return m_decoder.decode(std::move(tokens));
}

std::string Tokenizer::id_to_token(int32_t id) const {
    if (auto it = m_added_by_id.find(id); it != m_added_by_id.end()) return it->second.content;
    return std::string(m_model->id_to_token(id));
}

std::string Tokenizer::token_bytes(int32_t id) const {
    if (auto it = m_added_by_id.find(id); it != m_added_by_id.end()) return it->second.content;
    const std::string_view t = m_model->id_to_token(id);
    return t.empty() ? std::string() : m_decoder.token_bytes(std::string(t));
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
    if (auto it = m_added_by_content.find(token); it != m_added_by_content.end()) return it->second;
    return m_model->token_to_id(token);
}

bool Tokenizer::is_special(int32_t id) const {
    auto it = m_added_by_id.find(id);
    return it != m_added_by_id.end() && it->second.special;
}

bool Tokenizer::is_known_id(int32_t id) const {
    return m_added_by_id.count(id) > 0 || !m_model->id_to_token(id).empty();
}

}  // namespace loradesk::tokenizer
