// Vocabulary -> grammar bytes, and the grammar cache behind GenerateRequest::grammar.
#include "api/structured_output.h"

#include "core/error.h"
#include "grammar/grammar_cache.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace loradesk::api {

StructuredOutput::StructuredOutput(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, std::vector<int32_t> eos_ids)
    : m_tokenizer(std::move(tokenizer)),
      m_eos_ids(std::move(eos_ids)),
      m_cache(std::make_unique<grammar::GrammarCache>()) {}

StructuredOutput::~StructuredOutput() = default;

const grammar::TokenIndex& StructuredOutput::index() {
    std::call_once(m_index_once, [&] {
        grammar::Vocabulary v;
        const int32_t n = m_tokenizer->vocab_size();
        v.token_bytes.resize(std::size_t(n));
        v.special.assign(std::size_t(n), 0);
        for (int32_t id = 0; id < n; ++id) {
            // Special tokens (chat markers, EOS) are never grammar text; ids without a token (holes in the
            // vocabulary) have no bytes and would match anywhere, so they count as special too.
            std::string bytes = m_tokenizer->is_special(id) ? std::string() : m_tokenizer->token_bytes(id);
            v.special[std::size_t(id)] = bytes.empty();
            v.token_bytes[std::size_t(id)] = std::move(bytes);
        }
        v.eos_ids = m_eos_ids;
        m_index = grammar::build_token_index(std::move(v));
    });
    return *m_index;
}

std::shared_ptr<grammar::GrammarMatcher> StructuredOutput::matcher_for(const std::string& gbnf) {
    index();
    auto compiled = m_cache->get_or_compile(gbnf);
    if (!compiled.ok())
        throw_expected(ErrorCode::invalid_argument,
                       "the output grammar does not compile: " + compiled.status().message);
    return std::make_shared<grammar::GrammarMatcher>(compiled.value(), m_index);
}

}  // namespace loradesk::api
