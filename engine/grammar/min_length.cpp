// Shortest completions: how many bytes, at least, finish each alternative from each element position. Token
// budgets (GrammarMatcher::min_bytes_to_end) rest on it, so that max_tokens cannot cut a structure short.
#include "grammar/compiled_grammar.h"

#include <algorithm>

namespace loradesk::grammar {

void compute_min_suffix(CompiledGrammar& g) {
    using G = CompiledGrammar;
    const std::size_t n_rules = g.alt_offsets.empty() ? 0 : g.alt_offsets.size() - 1;
    std::vector<uint32_t> rule_min(n_rules, G::kNoEnd);
    g.min_suffix.assign(g.elements.size() + 1, 0);
    auto add = [](uint32_t a, uint32_t b) { return std::min<uint32_t>(G::kNoEnd, a + b); };
    // Iterate to the fixed point: each pass recomputes every suffix right to left from the rules' current minima;
    // minima only shrink and are bounded below, so this ends (after at most one pass per nesting level).
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t p = g.elements.size(); p-- > 0;) {
            const uint32_t e = g.elements[p];
            uint32_t v = 0;
            if (G::is_bytes(e))
                v = add(1, g.min_suffix[p + 1]);
            else if (G::is_rule(e))
                v = add(rule_min[G::arg(e)], g.min_suffix[p + 1]);
            if (v != g.min_suffix[p]) g.min_suffix[p] = v, changed = true;
        }
        for (std::size_t r = 0; r < n_rules; ++r) {
            uint32_t best = G::kNoEnd;
            for (uint32_t i = g.alt_offsets[r]; i < g.alt_offsets[r + 1]; ++i)
                best = std::min(best, g.min_suffix[g.alt_starts[i]]);
            if (best != rule_min[r]) rule_min[r] = best, changed = true;
        }
    }
}

}  // namespace loradesk::grammar
