// Public tokenizer API used by the engine and the server: loads a Hugging Face tokenizer directory
// (tokenizer.json + optional tokenizer_config.json) and encodes/decodes with exact HF parity for BPE
// models. Thread-safe: every method is const and the only mutable state (the BPE word cache) is locked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_decoder.h"

namespace loradesk::tokenizer {

class Tokenizer {
  public:
    // `dir` holds tokenizer.json (required) and tokenizer_config.json (optional). Throws ExpectedError
    // (not_found, corrupt_file or unsupported) with a message that names the file and the problem.
    static std::shared_ptr<Tokenizer> load(const std::string& dir);
    // Same, from JSON text (tests, embedded tokenizers). `config_json` may be empty.
    static std::shared_ptr<Tokenizer> from_json_text(std::string_view tokenizer_json, std::string_view config_json);

    // add_special_tokens = true applies the post-processor (e.g. BOS), like HF `encode`'s default.
    // Throws ExpectedError(invalid_argument) when `text` is not valid UTF-8.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
    // Unknown ids are skipped, like HF (models often have more embedding rows than tokens).
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
    // decode() without transformers' clean_up_tokenization_spaces (the streaming path applies it itself).
    std::string decode_raw(const std::vector<int32_t>& ids, bool skip_special_tokens) const;

    std::string id_to_token(int32_t id) const;  // empty when the id is unknown
    // The bytes `id` adds to generated text (TokenDecoder::token_bytes; an added token's content). Empty when
    // the id is unknown. For grammar-constrained decoding, which matches token bytes against a grammar.
    std::string token_bytes(int32_t id) const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    int32_t vocab_size() const { return m_vocab_size; }  // one past the largest known id
    bool is_special(int32_t id) const;
    bool is_known_id(int32_t id) const;

    std::optional<int32_t> bos_token_id() const { return m_bos_id; }
    std::optional<int32_t> eos_token_id() const { return m_eos_id; }
    const std::string& bos_token() const { return m_bos_token; }  // empty when not configured
    const std::string& eos_token() const { return m_eos_token; }
    bool clean_up_tokenization_spaces() const { return m_clean_up_spaces; }

  private:
    Tokenizer() = default;
    void load_added_tokens(const nlohmann::json& tok, const nlohmann::json& config);
    void load_post_processor(const nlohmann::json& post, const nlohmann::json& config);
    void load_special_token_names(const nlohmann::json& config);
    void encode_span(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

    std::unique_ptr<BpeModel> m_model;
    Normalizer m_normalizer;
    PreTokenizer m_pre_tokenizer;
    TokenDecoder m_decoder;
    std::unordered_map<int32_t, AddedToken> m_added_by_id;
    VocabMap m_added_by_content;
    AddedTokenMatcher m_raw_matcher;                  // tokens with normalized=false, matched on the input
    AddedTokenMatcher m_normalized_matcher;           // normalized=true, matched after normalization
    std::vector<int32_t> m_prefix_ids, m_suffix_ids;  // post-processing of a single sequence
    int32_t m_vocab_size = 0;
    std::optional<int32_t> m_bos_id, m_eos_id;
    std::string m_bos_token, m_eos_token;
    bool m_clean_up_spaces = false;
};

// transformers' clean_up_tokenization: drops the space before . ? ! , and English contractions.
std::string clean_up_tokenization(std::string text);

}  // namespace loradesk::tokenizer
