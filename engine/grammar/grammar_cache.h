// GrammarCache: compiled grammars by (GBNF text, root rule), so that a schema or grammar repeated across requests
// compiles once. Bounded LRU; thread-safe. Failed compilations are not cached (they are cheap to redo and
// carry their message each time).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.h"
#include "grammar/compiled_grammar.h"

namespace loradesk::grammar {

class GrammarCache {
  public:
    explicit GrammarCache(std::size_t capacity = 64) : m_capacity(capacity == 0 ? 1 : capacity) {}

    Result<std::shared_ptr<const CompiledGrammar>> get_or_compile(std::string_view gbnf,
                                                                  std::string_view root = "root");
    std::size_t size() const;

  private:
    struct Entry {
        std::string key;
        std::shared_ptr<const CompiledGrammar> grammar;
    };
    mutable std::mutex m_mutex;
    std::list<Entry> m_lru;  // front = most recent
    std::unordered_map<std::string_view, std::list<Entry>::iterator> m_index;
    std::size_t m_capacity;
};

}  // namespace loradesk::grammar
