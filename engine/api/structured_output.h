// Structured output for the facade: turns GenerateRequest::grammar (GBNF) into the grammar state the engine
// loop's sampler masks tokens with. Compiled grammars are cached by text (clients send the same schema with
// every request); the tokenizer's vocabulary index is built once, on the first constrained request.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loradesk::tokenizer {
class Tokenizer;
}
namespace loradesk::grammar {
class GrammarCache;
class GrammarMatcher;
class TokenIndex;
}  // namespace loradesk::grammar

namespace loradesk::api {

class StructuredOutput {
  public:
    StructuredOutput(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, std::vector<int32_t> eos_ids);
    ~StructuredOutput();

    // A fresh matcher at the start of `gbnf` (root rule "root"). Throws ExpectedError(invalid_argument) with
    // the grammar's error (line, column, rule) when it does not compile.
    std::shared_ptr<grammar::GrammarMatcher> matcher_for(const std::string& gbnf);

  private:
    const grammar::TokenIndex& index();

    std::shared_ptr<const tokenizer::Tokenizer> m_tokenizer;
    std::vector<int32_t> m_eos_ids;
    std::once_flag m_index_once;
    std::shared_ptr<const grammar::TokenIndex> m_index;
    std::unique_ptr<grammar::GrammarCache> m_cache;
};

}  // namespace loradesk::api
