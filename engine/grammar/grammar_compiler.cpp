#include "grammar/grammar_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "core/error.h"
#include "grammar/gbnf_parser.h"
#include "grammar/utf8_sequences.h"

namespace loradesk::grammar {
namespace {

[[noreturn]] void fail(const std::string& message) { throw_expected(ErrorCode::invalid_argument, "GBNF: " + message); }

const std::string& user_name(const GrammarIr& ir, uint32_t rule) { return ir.rules[ir.rules[rule].origin].name; }

// The least fixpoint "rule r holds if some alternative has every element holding", where a class element holds
// when class_holds says so and a reference holds when its rule does. Worklist form (linear in the grammar): the
// plain repeat-until-stable loop is quadratic on a long chain of rules written in reverse order.
template <class ClassHolds>
std::vector<bool> rules_where_some_alternative(const GrammarIr& ir, ClassHolds class_holds) {
    const std::size_t n = ir.rules.size();
    std::vector<bool> holds(n, false);
    std::vector<uint32_t> pending;                // per alternative: references not yet known to hold
    std::vector<uint32_t> alt_rule;               // per alternative: its rule
    std::vector<std::vector<uint32_t>> users(n);  // per rule: alternatives referring to it (with repeats)
    std::vector<uint32_t> ready;
    for (uint32_t r = 0; r < n; ++r)
        for (const auto& seq : ir.rules[r].alternatives) {
            const uint32_t a = uint32_t(pending.size());
            uint32_t refs = 0;
            bool possible = true;
            for (const auto& e : seq) {
                if (e.is_rule) {
                    ++refs;
                    users[e.rule].push_back(a);
                } else if (!class_holds(e)) {
                    possible = false;
                }
            }
            pending.push_back(possible ? refs : ~0u);
            alt_rule.push_back(r);
            if (possible && refs == 0 && !holds[r]) {
                holds[r] = true;
                ready.push_back(r);
            }
        }
    while (!ready.empty()) {
        uint32_t r = ready.back();
        ready.pop_back();
        for (uint32_t a : users[r]) {
            if (pending[a] == ~0u || --pending[a] != 0) continue;
            if (!holds[alt_rule[a]]) {
                holds[alt_rule[a]] = true;
                ready.push_back(alt_rule[a]);
            }
        }
    }
    return holds;
}

// A rule is productive when some alternative can finish; alternatives that cannot are removed, since no input
// ever completes them (and the matcher relies on every live stack having a completion).
void drop_unproductive(GrammarIr& ir) {
    const std::size_t n = ir.rules.size();
    const std::vector<bool> productive =
        rules_where_some_alternative(ir, [](const IrElement& e) { return !e.ranges.empty(); });
    auto element_ok = [&](const IrElement& e) { return e.is_rule ? bool(productive[e.rule]) : !e.ranges.empty(); };
    if (!productive[ir.root]) {
        std::string names;
        for (std::size_t r = 0; r < n; ++r)
            if (!productive[r] && !ir.rules[r].generated && names.size() < 200)
                names += (names.empty() ? "'" : ", '") + ir.rules[r].name + "'";
        fail(
            fmt::format("rule '{}' can never finish: it always needs more input (rules that never finish: {}); "
                        "give the recursion an alternative that ends",
                        ir.rules[ir.root].name, names));
    }
    for (auto& rule : ir.rules)
        std::erase_if(rule.alternatives,
                      [&](const IrSequence& seq) { return !std::all_of(seq.begin(), seq.end(), element_ok); });
}

std::vector<bool> nullable_rules(const GrammarIr& ir) {
    return rules_where_some_alternative(ir, [](const IrElement&) { return false; });
}

struct LeftEdge {
    uint32_t to;
    bool tail;  // the reference is the last element: expanding it does not grow the stack
};

// Left recursion = a cycle of "can start with" edges containing an edge that leaves something on the stack.
// Cycles made only of tail edges (e.g. (x?)* desugared) are harmless: the matcher deduplicates stacks.
void check_left_recursion(const GrammarIr& ir) {
    const uint32_t n = uint32_t(ir.rules.size());
    auto nullable = nullable_rules(ir);
    std::vector<std::vector<LeftEdge>> edges(n);
    for (uint32_t r = 0; r < n; ++r)
        for (const auto& seq : ir.rules[r].alternatives)
            for (std::size_t i = 0; i < seq.size(); ++i) {
                if (!seq[i].is_rule) break;
                edges[r].push_back({seq[i].rule, i + 1 == seq.size()});
                if (!nullable[seq[i].rule]) break;
            }
    // Iterative Tarjan SCC.
    std::vector<int32_t> index(n, -1), low(n, 0), comp(n, -1);
    std::vector<uint32_t> stack, call;
    std::vector<std::size_t> next_edge(n, 0);
    std::vector<bool> on_stack(n, false);
    int32_t counter = 0, n_comp = 0;
    for (uint32_t s = 0; s < n; ++s) {
        if (index[s] >= 0) continue;
        call.push_back(s);
        while (!call.empty()) {
            uint32_t v = call.back();
            if (index[v] < 0) {
                index[v] = low[v] = counter++;
                stack.push_back(v);
                on_stack[v] = true;
            }
            if (next_edge[v] < edges[v].size()) {
                uint32_t w = edges[v][next_edge[v]++].to;
                if (index[w] < 0)
                    call.push_back(w);
                else if (on_stack[w])
                    low[v] = std::min(low[v], index[w]);
                continue;
            }
            call.pop_back();
            if (!call.empty()) low[call.back()] = std::min(low[call.back()], low[v]);
            if (low[v] == index[v]) {
                for (uint32_t w = ~0u; w != v;) {
                    w = stack.back();
                    stack.pop_back();
                    on_stack[w] = false;
                    comp[w] = n_comp;
                }
                ++n_comp;
            }
        }
    }
    for (uint32_t r = 0; r < n; ++r)
        for (const auto& e : edges[r])
            if (!e.tail && comp[e.to] == comp[r]) {
                std::string cycle = "'" + user_name(ir, r) + "'";
                for (uint32_t o = 0; o < n; ++o)
                    if (comp[o] == comp[r] && !ir.rules[o].generated && o != ir.rules[r].origin && cycle.size() < 200)
                        cycle += ", '" + ir.rules[o].name + "'";
                fail(
                    fmt::format("rule '{}' is left-recursive: it can reach itself before matching any character "
                                "(through {}); rewrite the recursion as repetition, e.g. expr ::= term (\"+\" term)*",
                                user_name(ir, r), cycle));
            }
}

// Lowering: code-point classes become byte classes, inline byte sequences, or (for several multi-byte sequences)
// a generated rule of alternatives, shared between identical classes.
class Lowering {
  public:
    explicit Lowering(const GrammarIr& ir) : m_ir(ir) {}

    std::shared_ptr<CompiledGrammar> run() {
        auto g = std::make_shared<CompiledGrammar>();
        m_g = g.get();
        const uint32_t n_user = uint32_t(m_ir.rules.size());
        m_rule_alts.resize(n_user);
        for (const auto& r : m_ir.rules) m_g->rule_names.push_back(r.name);
        m_g->elements = {CompiledGrammar::kRuleTag | m_ir.root, CompiledGrammar::kEnd};
        m_g->user_frame = {1, 1};
        for (uint32_t r = 0; r < n_user; ++r)
            for (const auto& seq : m_ir.rules[r].alternatives) {
                m_user = !m_ir.rules[r].generated;
                uint32_t start = lower_sequence(seq);  // may append class rules to m_rule_alts
                m_rule_alts[r].push_back(start);
            }
        // Class rules were appended to m_rule_alts while lowering.
        m_g->alt_offsets.push_back(0);
        for (const auto& alts : m_rule_alts) {
            m_g->alt_starts.insert(m_g->alt_starts.end(), alts.begin(), alts.end());
            m_g->alt_offsets.push_back(uint32_t(m_g->alt_starts.size()));
        }
        if (m_g->elements.size() > kMaxElements * 4) fail("the grammar is too large after lowering to bytes");
        return g;
    }

  private:
    uint32_t byte_set(const ByteSet& set) {
        auto [it, inserted] = m_sets.try_emplace(set, uint32_t(m_g->byte_sets.size()));
        if (inserted) m_g->byte_sets.push_back(set);
        return CompiledGrammar::kBytesTag | it->second;
    }
    uint32_t byte_range(ByteRange r) {
        ByteSet set{};
        for (unsigned b = r.lo; b <= r.hi; ++b) set[b >> 6] |= 1ull << (b & 63);
        return byte_set(set);
    }

    // Appends the elements for one code-point class to `out` (a sequence being built).
    void lower_class(const std::vector<CpRange>& ranges, std::vector<uint32_t>& out) {
        auto seqs = utf8_sequences(ranges);
        ByteSet singles{};
        bool any_single = false;
        std::vector<const Utf8Sequence*> multi;
        for (const auto& s : seqs) {
            if (s.size() == 1) {
                for (unsigned b = s[0].lo; b <= s[0].hi; ++b) singles[b >> 6] |= 1ull << (b & 63);
                any_single = true;
            } else {
                multi.push_back(&s);
            }
        }
        if (multi.empty() && any_single) {
            out.push_back(byte_set(singles));
            return;
        }
        if (multi.size() == 1 && !any_single) {
            for (const auto& r : *multi[0]) out.push_back(byte_range(r));
            return;
        }
        auto key = std::vector<std::pair<uint32_t, uint32_t>>();
        for (const auto& r : ranges) key.emplace_back(r.lo, r.hi);
        auto it = m_class_rules.find(key);
        if (it == m_class_rules.end()) {
            uint32_t rule = uint32_t(m_rule_alts.size());
            m_rule_alts.emplace_back();
            m_g->rule_names.push_back("[class]");
            std::vector<uint32_t> alts;
            const bool user = m_user;
            m_user = false;
            if (any_single) alts.push_back(emit({byte_set(singles)}));
            for (const auto* s : multi) {
                std::vector<uint32_t> elems;
                for (const auto& r : *s) elems.push_back(byte_range(r));
                alts.push_back(emit(elems));
            }
            m_user = user;
            m_rule_alts[rule] = std::move(alts);
            it = m_class_rules.emplace(key, rule).first;
        }
        out.push_back(CompiledGrammar::kRuleTag | it->second);
    }

    uint32_t emit(const std::vector<uint32_t>& elems) {
        if (elems.empty()) return 1;  // position 1 is an END: every empty alternative starts there
        uint32_t start = uint32_t(m_g->elements.size());
        m_g->elements.insert(m_g->elements.end(), elems.begin(), elems.end());
        m_g->elements.push_back(CompiledGrammar::kEnd);
        m_g->user_frame.resize(m_g->elements.size(), m_user ? 1 : 0);
        return start;
    }

    uint32_t lower_sequence(const IrSequence& seq) {
        std::vector<uint32_t> elems;
        for (const auto& e : seq) {
            if (e.is_rule)
                elems.push_back(CompiledGrammar::kRuleTag | e.rule);
            else
                lower_class(e.ranges, elems);
        }
        return emit(elems);
    }

    const GrammarIr& m_ir;
    CompiledGrammar* m_g = nullptr;
    bool m_user = true;  // whether elements being emitted belong to a user rule's alternative
    std::vector<std::vector<uint32_t>> m_rule_alts;
    std::map<ByteSet, uint32_t> m_sets;
    std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> m_class_rules;
};

std::atomic<uint64_t> g_next_uid{1};

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_ir(GrammarIr ir) {
    try {
        drop_unproductive(ir);
        check_left_recursion(ir);
        auto g = Lowering(ir).run();
        g->uid = g_next_uid.fetch_add(1);
        return std::shared_ptr<const CompiledGrammar>(std::move(g));
    } catch (const Error& e) {
        return Status::failure(e.code(), e.what());
    } catch (const std::bad_alloc&) {
        return Status::failure(ErrorCode::too_large, "GBNF: out of memory while compiling the grammar");
    }
}

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view gbnf, std::string_view root) {
    auto ir = parse_gbnf(gbnf, root);
    if (!ir.ok()) return ir.status();
    return compile_ir(std::move(ir).value());
}

}  // namespace loradesk::grammar
