// BPE loading and the merge loop (mirrors HF tokenizers' Word::merge_all: lowest rank first, ties to
// the leftmost pair).
#include "tokenizer/bpe_model.h"

#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "tokenizer/unicode_text.h"

namespace loradesk::tokenizer {

using nlohmann::json;

namespace {

std::optional<std::string> optional_string(const json& m, const char* key) {
    if (!m.contains(key) || m[key].is_null()) return std::nullopt;
    if (!m[key].is_string())
        throw_expected(ErrorCode::corrupt_file,
                       std::string("tokenizer.json: model.") + key + " must be a string or null");
    return m[key].get<std::string>();
}

std::pair<std::string, std::string> parse_merge(const json& m, std::size_t index) {
    if (m.is_string()) {
        const std::string& s = m.get_ref<const std::string&>();
        // Old encoding "a b": tokens never contain a raw space, so the single space separates them.
        auto sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: merge #" + std::to_string(index) + " '" + s +
                                                        "' is not two tokens separated by one space");
        return {s.substr(0, sp), s.substr(sp + 1)};
    }
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        return {m[0].get<std::string>(), m[1].get<std::string>()};
    throw_expected(ErrorCode::corrupt_file, "tokenizer.json: merge #" + std::to_string(index) +
                                                " must be \"a b\" or [\"a\", \"b\"], got " + m.dump());
}

}  // namespace

std::unique_ptr<BpeModel> BpeModel::from_json(const json& m) {
    if (!m.is_object()) throw_expected(ErrorCode::corrupt_file, "tokenizer.json: \"model\" must be an object");
    std::string type = m.value("type", std::string("BPE"));
    if (type != "BPE")
        throw_expected(ErrorCode::unsupported, "tokenizer.json: model type '" + type +
                                                   "' is not supported; loradesk supports BPE tokenizers only "
                                                   "(byte-level BPE like Qwen/Llama 3, and SentencePiece-style BPE "
                                                   "with byte_fallback like Llama 2/Mistral/Gemma)");
    if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0)
        throw_expected(ErrorCode::unsupported,
                       "tokenizer.json: BPE dropout is not supported for inference; set it to null");
    auto bpe = std::make_unique<BpeModel>();
    if (!m.contains("vocab") || !m["vocab"].is_object())
        throw_expected(ErrorCode::corrupt_file, "tokenizer.json: model.vocab must be an object of token -> id");
    const json& vocab = m["vocab"];
    bpe->m_vocab.reserve(vocab.size());
    int32_t max_id = -1;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
            throw_expected(ErrorCode::corrupt_file,
                           "tokenizer.json: vocab entry '" + it.key() + "' needs a non-negative integer id");
        int32_t id = it.value().get<int32_t>();
        bpe->m_vocab.emplace(it.key(), id);
        max_id = std::max(max_id, id);
    }
    bpe->m_id_to_token.resize(std::size_t(max_id + 1));
    for (auto& [tok, id] : bpe->m_vocab) bpe->m_id_to_token[std::size_t(id)] = tok;

    bpe->m_continuing_prefix = optional_string(m, "continuing_subword_prefix").value_or("");
    bpe->m_end_suffix = optional_string(m, "end_of_word_suffix").value_or("");
    bpe->m_fuse_unk = m.value("fuse_unk", false);
    bpe->m_byte_fallback = m.value("byte_fallback", false);
    bpe->m_ignore_merges = m.value("ignore_merges", false);
    if (auto unk = optional_string(m, "unk_token")) {
        auto id = bpe->token_to_id(*unk);
        if (!id)
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: unk_token '" + *unk + "' is not in the vocab");
        bpe->m_unk_id = id;
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        bpe->m_byte_ids[std::size_t(b)] = bpe->token_to_id(name).value_or(-1);
    }

    static const json kNoMerges = json::array();
    const json& merges = m.contains("merges") ? m["merges"] : kNoMerges;
    if (!merges.is_array()) throw_expected(ErrorCode::corrupt_file, "tokenizer.json: model.merges must be an array");
    bpe->m_merges.reserve(merges.size());
    const std::size_t plen = bpe->m_continuing_prefix.size();
    for (std::size_t i = 0; i < merges.size(); ++i) {
        auto [a, b] = parse_merge(merges[i], i);
        auto ia = bpe->token_to_id(a), ib = bpe->token_to_id(b);
        // The merged token drops the continuing prefix of its right half, as HF builds it.
        std::string merged = a + (plen && b.compare(0, plen, bpe->m_continuing_prefix) == 0 ? b.substr(plen) : b);
        auto inew = bpe->token_to_id(merged);
        if (!ia || !ib || !inew)
            throw_expected(ErrorCode::corrupt_file, "tokenizer.json: merge #" + std::to_string(i) + " ('" + a + "', '" +
                                                        b + "') uses a token missing from the vocab");
        bpe->m_merges[pair_key(*ia, *ib)] = Merge{int32_t(i), *inew};
    }
    return bpe;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    auto it = m_vocab.find(token);
    if (it == m_vocab.end()) return std::nullopt;
    return it->second;
}

std::string_view BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || std::size_t(id) >= m_id_to_token.size()) return {};
    return m_id_to_token[std::size_t(id)];
}

void BpeModel::initial_symbols(std::string_view w, std::vector<int32_t>& ids) const {
    int32_t pending_unk = -1;  // an unk waiting to see whether the next character is unknown too
    std::string buf;
    std::size_t i = 0;
    while (i < w.size()) {
        std::size_t len = utf8_sequence_length(w, i);
        if (len == 0) len = 1;  // cannot happen for validated input; never loop forever
        const bool first = i == 0, last = i + len == w.size();
        std::string_view ch = w.substr(i, len);
        std::string_view s = ch;
        if ((!first && !m_continuing_prefix.empty()) || (last && !m_end_suffix.empty())) {
            buf.assign(first ? "" : m_continuing_prefix);
            buf.append(ch);
            if (last) buf.append(m_end_suffix);
            s = buf;
        }
        i += len;
        if (auto it = m_vocab.find(s); it != m_vocab.end()) {
            if (pending_unk >= 0) ids.push_back(pending_unk), pending_unk = -1;
            ids.push_back(it->second);
            continue;
        }
        if (m_byte_fallback) {
            bool all = true;
            for (unsigned char b : s) all = all && m_byte_ids[b] >= 0;
            if (all) {
                for (unsigned char b : s) ids.push_back(m_byte_ids[b]);
                continue;
            }
        }
        if (m_unk_id) {
            // fuse_unk collapses a run of unknown characters into one unk.
            if (pending_unk >= 0 && !m_fuse_unk) ids.push_back(pending_unk);
            pending_unk = *m_unk_id;
        }
    }
    if (pending_unk >= 0) ids.push_back(pending_unk);
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<int32_t> ids;
    initial_symbols(word, ids);
    const int n = int(ids.size());
    if (n < 2) {
        out.insert(out.end(), ids.begin(), ids.end());
        return;
    }
    std::vector<int> prev(static_cast<std::size_t>(n)), next(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) prev[std::size_t(i)] = i - 1, next[std::size_t(i)] = i + 1 < n ? i + 1 : -1;
    struct Cand {
        int32_t rank;
        int pos;
        int32_t new_id;
        bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Cand, std::vector<Cand>, std::greater<>> heap;
    auto push_pair = [&](int pos) {
        int nx = next[std::size_t(pos)];
        if (nx < 0) return;
        auto it = m_merges.find(pair_key(ids[std::size_t(pos)], ids[std::size_t(nx)]));
        if (it != m_merges.end()) heap.push({it->second.rank, pos, it->second.new_id});
    };
    for (int i = 0; i + 1 < n; ++i) push_pair(i);
    std::vector<bool> dead(std::size_t(n), false);
    while (!heap.empty()) {
        Cand c = heap.top();
        heap.pop();
        const auto pos = std::size_t(c.pos);
        if (dead[pos] || next[pos] < 0) continue;
        const auto nx = std::size_t(next[pos]);
        // Stale entry: one of the two symbols changed since this candidate was queued.
        auto it = m_merges.find(pair_key(ids[pos], ids[nx]));
        if (it == m_merges.end() || it->second.new_id != c.new_id || it->second.rank != c.rank) continue;
        ids[pos] = c.new_id;
        dead[nx] = true;
        next[pos] = next[nx];
        if (next[pos] >= 0) prev[std::size_t(next[pos])] = c.pos;
        if (prev[pos] >= 0) push_pair(prev[pos]);
        push_pair(c.pos);
    }
    for (int i = 0; i >= 0; i = next[std::size_t(i)]) out.push_back(ids[std::size_t(i)]);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    if (m_ignore_merges) {
        if (auto it = m_vocab.find(word); it != m_vocab.end()) {
            out.push_back(it->second);
            return;
        }
    }
    const bool cacheable = word.size() <= kMaxCachedWordBytes;
    CacheShard* shard = nullptr;
    if (cacheable) {
        shard = &m_cache[std::hash<std::string_view>{}(word) % kCacheShards];
        std::lock_guard lock(shard->mutex);
        if (auto it = shard->words.find(word); it != shard->words.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::size_t start = out.size();
    merge_word(word, out);
    if (cacheable) {
        std::vector<int32_t> ids(out.begin() + std::ptrdiff_t(start), out.end());
        std::lock_guard lock(shard->mutex);
        // A full shard is dropped wholesale: cheaper than LRU bookkeeping and the hot words come back at once.
        if (shard->words.size() >= kCacheShardCapacity) shard->words.clear();
        shard->words.emplace(std::string(word), std::move(ids));
    }
}

}  // namespace loradesk::tokenizer
