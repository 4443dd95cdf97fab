// Streaming detokenization: token ids go in one at a time, text deltas come out. Deltas are always
// valid UTF-8 (incomplete characters are held back), and their concatenation equals a full decode of
// the same ids (including Metaspace/Strip first-token handling and clean_up_tokenization_spaces).
// Not thread-safe: one instance per sequence, used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loradesk::tokenizer {

class Tokenizer;

class IncrementalDetokenizer {
  public:
    // `context_ids` (e.g. the last few prompt tokens) are decoded for context only, never emitted, so
    // that the first generated token keeps the leading space it has inside the full text.
    IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens,
                           std::vector<int32_t> context_ids = {});

    // Returns the text that became final with this token (possibly empty).
    std::string push(int32_t id);
    // Returns everything still held back; call once when the sequence ends.
    std::string finish();

    const std::string& text() const { return m_emitted_total; }  // all text emitted so far

  private:
    std::string decode_from(std::size_t begin) const;  // raw: no clean-up
    std::size_t stable_length(const std::string& text) const;
    void try_advance_window(const std::string& text);
    // clean_up_tokenization_spaces applied to a stream: returns the cleaned text that is final.
    std::string clean_stream(const std::string& raw_delta, bool flush);

    std::shared_ptr<const Tokenizer> m_tokenizer;
    bool m_skip_special;
    std::vector<int32_t> m_ids;  // context + generated ids
    std::size_t m_n_context = 0;
    // Tokens that decode to the lone bytes 0x80 and 0xA0 (UTF-8 continuations), used to test whether
    // trailing U+FFFDs are an incomplete character; -1 when the vocabulary has none.
    int32_t m_probe_80 = -1, m_probe_a0 = -1;
    // HF's ByteFallback turns a whole run of <0xNN> tokens into U+FFFDs when the run is not valid UTF-8,
    // so text from an open run can still change: it is held until a non-byte token closes the run.
    bool m_byte_fallback = false;
    bool byte_run_open() const;
    std::size_t m_window = 0;          // decoding starts here; earlier ids are only context for none
    std::size_t m_window_emitted = 0;  // bytes of decode(window) already emitted (or context)
    std::size_t m_pending_tokens = 0;  // tokens pushed since the last delta
    std::string m_context_text;
    std::string m_emitted_raw;    // raw text emitted by the window (before clean-up)
    std::string m_clean_pending;  // raw text the clean-up stage still holds
    std::string m_emitted_total;  // final text handed out
};

// Holds back text that may still become one of the stop strings. push() returns the text that is safe
// to emit; once a stop string is found, `stopped` is set, `text` is what came before it and further
// input is ignored. Not thread-safe (one per sequence).
class StopStringMatcher {
  public:
    explicit StopStringMatcher(std::vector<std::string> stops);

    struct Result {
        std::string text;
        bool stopped = false;
        std::string stop;  // the stop string that matched
    };
    Result push(const std::string& delta);
    // The held-back text (no stop matched); empty after a stop.
    std::string finish();
    bool stopped() const { return m_stopped; }

  private:
    std::vector<std::string> m_stops;
    std::string m_buffer;
    bool m_stopped = false;
};

}  // namespace loradesk::tokenizer
