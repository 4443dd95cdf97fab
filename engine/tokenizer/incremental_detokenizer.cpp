// Incremental detokenization with a sliding window of ids: decode(window) is diffed against what was
// already emitted, and the window moves forward once its tail decodes on its own to the same text.
#include "tokenizer/incremental_detokenizer.h"

#include <cstdio>

#include "core/log.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

namespace {

// Up to 4 tokens can form one UTF-8 character; beyond that a trailing U+FFFD is real output.
constexpr std::size_t kMaxHeldTokens = 4;
// How far back a new window start is searched.
constexpr std::size_t kMaxWindowProbe = 6;
// Longest stretch one clean-up match (or chain of two) covers, starting at its space.
constexpr std::size_t kCleanUpSpan = 5;

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens,
                                               std::vector<int32_t> context_ids)
    : m_tokenizer(std::move(tokenizer)), m_skip_special(skip_special_tokens), m_ids(std::move(context_ids)) {
    m_n_context = m_ids.size();
    auto find_probe = [&](int byte) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", byte);
        for (const std::string& candidate : {std::string(name), byte_to_unicode_table()[std::size_t(byte)]}) {
            auto id = m_tokenizer->token_to_id(candidate);
            if (id && m_tokenizer->decode_raw({*id}, false) == kReplacementChar) return *id;
        }
        return int32_t(-1);
    };
    if (auto a = m_tokenizer->token_to_id("<0x41>")) m_byte_fallback = m_tokenizer->decode_raw({*a}, false) == "A";
    m_probe_80 = find_probe(0x80);
    m_probe_a0 = find_probe(0xA0);
    m_context_text = decode_from(0);
    m_window_emitted = m_context_text.size();
}

std::string IncrementalDetokenizer::decode_from(std::size_t begin) const {
    std::vector<int32_t> window(m_ids.begin() + std::ptrdiff_t(begin), m_ids.end());
    return m_tokenizer->decode_raw(window, m_skip_special);
}

std::size_t IncrementalDetokenizer::stable_length(const std::string& text) const {
    std::size_t n = text.size();
    while (n >= kReplacementChar.size() &&
           text.compare(n - kReplacementChar.size(), kReplacementChar.size(), kReplacementChar) == 0)
        n -= kReplacementChar.size();
    if (n == text.size()) return n;
    bool incomplete = false;
    if (m_probe_80 >= 0 && m_probe_a0 >= 0) {
        // Trailing U+FFFDs are an unfinished character exactly when more continuation bytes change them;
        // A0 80 80 completes the lead bytes E0/F0 (which need A0+/90+), 80 80 80 all the others.
        for (int32_t first : {m_probe_80, m_probe_a0}) {
            std::vector<int32_t> probe(m_ids.begin() + std::ptrdiff_t(m_window), m_ids.end());
            probe.push_back(first);
            probe.insert(probe.end(), 2, m_probe_80);
            std::string extended = m_tokenizer->decode_raw(probe, m_skip_special);
            incomplete = incomplete || extended.compare(0, text.size(), text) != 0;
        }
    } else {
        incomplete = m_pending_tokens < kMaxHeldTokens;
    }
    return incomplete ? n : text.size();
}

bool IncrementalDetokenizer::byte_run_open() const {
    if (!m_byte_fallback) return false;
    for (std::size_t i = m_ids.size(); i-- > m_window;) {
        int32_t id = m_ids[i];
        // Ids the decoder never sees (unknown, skipped specials) do not close a run.
        if (!m_tokenizer->is_known_id(id) || (m_skip_special && m_tokenizer->is_special(id))) continue;
        std::string t = m_tokenizer->id_to_token(id);
        return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>';
    }
    return false;
}

std::string IncrementalDetokenizer::clean_stream(const std::string& raw_delta, bool flush) {
    if (!m_tokenizer->clean_up_tokenization_spaces()) return raw_delta;
    m_clean_pending += raw_delta;
    // Every clean-up rule (and the one chain two rules can form, "  ' s") lies within 5 bytes that start
    // with a space, so cleaning stays exact when the stream is cut where no space is in the 5 bytes before.
    std::size_t cut = m_clean_pending.size();
    if (!flush) {
        for (;;) {
            std::size_t space = cut == 0 ? std::string::npos : m_clean_pending.rfind(' ', cut - 1);
            if (space == std::string::npos || space + kCleanUpSpan <= cut) break;
            cut = space;
        }
    }
    std::string out = clean_up_tokenization(m_clean_pending.substr(0, cut));
    m_clean_pending.erase(0, cut);
    return out;
}

void IncrementalDetokenizer::try_advance_window(const std::string& text) {
    const std::size_t n = m_ids.size();
    const std::size_t lowest = std::max(m_window + 1, n > kMaxWindowProbe ? n - kMaxWindowProbe : 0);
    for (std::size_t start = n - 1; start >= lowest && start > m_window; --start) {
        std::string tail = decode_from(start);
        // The new window must decode on its own to exactly the end of the current text, and must not
        // begin inside a character (a leading U+FFFD) — otherwise its later diffs would be wrong.
        if (tail.empty() || tail.compare(0, kReplacementChar.size(), kReplacementChar) == 0) continue;
        if (!ends_with(text, tail)) continue;
        m_window = start;
        m_window_emitted = tail.size();
        return;
    }
}

std::string IncrementalDetokenizer::push(int32_t id) {
    m_ids.push_back(id);
    ++m_pending_tokens;
    std::string text = decode_from(m_window);
    std::size_t stable = byte_run_open() ? std::min(m_window_emitted, text.size()) : stable_length(text);
    std::string raw;
    // Never cut inside a character: the window's earlier text is stable, so this only waits.
    if (stable > m_window_emitted && (static_cast<unsigned char>(text[m_window_emitted]) & 0xC0) != 0x80) {
        raw = text.substr(m_window_emitted, stable - m_window_emitted);
        m_window_emitted = stable;
        m_pending_tokens = 0;
        m_emitted_raw += raw;
    }
    if (stable == text.size() && m_window_emitted == text.size() && m_ids.size() - m_window > 2)
        try_advance_window(text);
    std::string delta = clean_stream(raw, false);
    m_emitted_total += delta;
    return delta;
}

std::string IncrementalDetokenizer::finish() {
    // Reconcile with a full decode: it is the definition of the right answer and costs one pass.
    std::string full = decode_from(0);
    std::string generated =
        full.compare(0, m_context_text.size(), m_context_text) == 0 ? full.substr(m_context_text.size()) : full;
    std::string raw_rest;
    if (generated.compare(0, m_emitted_raw.size(), m_emitted_raw) == 0) {
        raw_rest = generated.substr(m_emitted_raw.size());
    } else {
        log::warn("incremental detokenizer diverged from the full decode after {} bytes; emitting the window tail",
                  m_emitted_raw.size());
        std::string text = decode_from(m_window);
        if (text.size() > m_window_emitted) raw_rest = text.substr(m_window_emitted);
    }
    m_emitted_raw += raw_rest;
    m_pending_tokens = 0;
    std::string rest = clean_stream(raw_rest, true);
    m_emitted_total += rest;
    return rest;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) m_stops.push_back(std::move(s));
}

StopStringMatcher::Result StopStringMatcher::push(const std::string& delta) {
    Result r;
    if (m_stopped) return r;
    m_buffer += delta;
    // Earliest stop wins; at the same position the longest one.
    std::size_t best = std::string::npos;
    const std::string* best_stop = nullptr;
    for (const auto& s : m_stops) {
        std::size_t p = m_buffer.find(s);
        if (p != std::string::npos && (p < best || (p == best && s.size() > best_stop->size()))) {
            best = p;
            best_stop = &s;
        }
    }
    if (best_stop) {
        r.text = m_buffer.substr(0, best);
        r.stopped = true;
        r.stop = *best_stop;
        m_stopped = true;
        m_buffer.clear();
        return r;
    }
    // Hold back the longest buffer suffix that is a proper prefix of a stop string.
    std::size_t hold = 0;
    for (const auto& s : m_stops) {
        for (std::size_t k = std::min(s.size() - 1, m_buffer.size()); k > hold; --k) {
            if (m_buffer.compare(m_buffer.size() - k, k, s, 0, k) == 0) {
                hold = k;
                break;
            }
        }
    }
    r.text = m_buffer.substr(0, m_buffer.size() - hold);
    m_buffer.erase(0, m_buffer.size() - hold);
    return r;
}

std::string StopStringMatcher::finish() {
    std::string rest = std::move(m_buffer);
    m_buffer.clear();
    return m_stopped ? std::string() : rest;
}

}  // namespace loradesk::tokenizer
