// engine/kv PrefixCache: namespace isolation on every Match/Insert/Evict path, locking, namespace
// eviction, and a randomized run against a naive model that checks page accounting and KV contents.
#include <QtTest>

#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "kv/prefix_cache.h"

using namespace loradesk;
using namespace loradesk::kv;

namespace {

constexpr int kPs = 4;

// A sequence as the scheduler keeps it: tokens, page table (one pool reference per page), locked path.
struct Req {
    std::string ns;
    std::vector<int32_t> tokens;
    std::vector<int32_t> pages;
    PrefixNode* lock = nullptr;
    int hit = 0;
};

std::vector<int32_t> seq(int n, int32_t base) {
    std::vector<int32_t> v(std::size_t(n), 0);
    for (int i = 0; i < n; ++i) v[std::size_t(i)] = base + i;
    return v;
}

Req start(PrefixCache& c, PagePool& pool, const std::string& ns, std::vector<int32_t> tokens) {
    Req r;
    r.ns = ns;
    r.tokens = std::move(tokens);
    PrefixMatch m = c.acquire(ns, r.tokens);
    r.lock = m.lock;
    r.pages = m.pages;
    r.hit = m.n_tokens;
    int need = pool.pages_for_tokens(int(r.tokens.size())) - int(r.pages.size());
    if (need > pool.n_free()) c.evict(need - pool.n_free());
    if (!pool.allocate(need, r.pages)) throw std::runtime_error("test pool too small");
    return r;
}

void finish(PrefixCache& c, PagePool& pool, Req& r) {
    r.lock = c.extend(r.lock, r.tokens, r.pages);
    c.release(r.lock);
    pool.release_all(r.pages);
    r.pages.clear();
    r.lock = nullptr;
}

}  // namespace

class TstPrefixCache : public QObject {
    Q_OBJECT
  private slots:
    void same_adapter_reuses_prefix() {
        PagePool pool(64, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(10, 100));
        QCOMPARE(a.hit, 0);
        finish(c, pool, a);
        QCOMPARE(c.n_cached_pages(), 2);  // 10 tokens = 2 full pages + a partial one that is never shared
        Req b = start(c, pool, "A", seq(13, 100));
        QCOMPARE(b.hit, 8);
        QCOMPARE(c.stats("A").hit_tokens, qint64(8));
        QCOMPARE(c.match_length("A", seq(7, 100)), 4);
        finish(c, pool, b);
        QCOMPARE(c.n_cached_pages(), 3);
    }
    void different_adapters_never_share() {
        PagePool pool(64, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(12, 0));
        finish(c, pool, a);
        QCOMPARE(c.match_length("B", seq(12, 0)), 0);
        Req b = start(c, pool, "B", seq(12, 0));
        QCOMPARE(b.hit, 0);
        finish(c, pool, b);
        QCOMPARE(c.stats("A").pages_held, 3);
        QCOMPARE(c.stats("B").pages_held, 3);
    }
    void base_is_independent_of_adapters() {
        PagePool pool(64, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(8, 0));
        finish(c, pool, a);
        QCOMPARE(c.match_length("", seq(8, 0)), 0);
        Req base = start(c, pool, "", seq(8, 0));
        finish(c, pool, base);
        c.evict_namespace("A");
        QCOMPARE(c.match_length("", seq(8, 0)), 8);
        c.evict_namespace("");
        QCOMPARE(c.n_cached_pages(), 0);
    }
    void many_adapters_cache_independently_data() {
        QTest::addColumn<int>("n_adapters");
        QTest::newRow("2") << 2;
        QTest::newRow("9") << 9;
        QTest::newRow("33") << 33;
    }
    void many_adapters_cache_independently() {
        QFETCH(int, n_adapters);
        PagePool pool(4 * n_adapters + 8, kPs);
        PrefixCache c(pool);
        // Adapter k caches k % 3 + 1 pages of the same token stream.
        for (int k = 0; k < n_adapters; ++k) {
            Req r = start(c, pool, "ad" + std::to_string(k), seq(4 * (k % 3 + 1), 7));
            finish(c, pool, r);
        }
        for (int k = 0; k < n_adapters; ++k) {
            QCOMPARE(c.match_length("ad" + std::to_string(k), seq(40, 7)), 4 * (k % 3 + 1));
            QCOMPARE(c.stats("ad" + std::to_string(k)).pages_held, k % 3 + 1);
        }
        QCOMPARE(int(c.namespaces().size()), n_adapters);
    }
    void last_inserted_node_in_right_namespace() {
        PagePool pool(64, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(4, 0));
        Req b = start(c, pool, "B", seq(4, 0));
        a.tokens = seq(9, 0);  // decode filled a second page
        pool.allocate(2, a.pages);
        a.lock = c.extend(a.lock, a.tokens, a.pages);
        QCOMPARE(PrefixCache::namespace_of(a.lock), std::string("A"));
        QCOMPARE(PrefixCache::depth(a.lock), 2);
        b.lock = c.extend(b.lock, b.tokens, b.pages);
        QCOMPARE(PrefixCache::namespace_of(b.lock), std::string("B"));
        QCOMPARE(c.match_length("A", seq(9, 0)), 8);
        QCOMPARE(c.match_length("B", seq(9, 0)), 4);
        finish(c, pool, a);
        finish(c, pool, b);
    }
    void eviction_never_crosses_namespaces() {
        PagePool pool(16, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(16, 0));
        finish(c, pool, a);
        Req b = start(c, pool, "B", seq(16, 0));
        b.lock = c.extend(b.lock, b.tokens, b.pages);  // B stays locked by a running request
        QCOMPARE(c.n_evictable_pages(), 4);
        QCOMPARE(c.evict(100), 4);
        QCOMPARE(c.match_length("A", seq(16, 0)), 0);
        QCOMPARE(c.match_length("B", seq(16, 0)), 16);
        c.evict_namespace("A");
        QCOMPARE(c.stats("B").pages_held, 4);
        finish(c, pool, b);
        QCOMPARE(c.match_length("B", seq(16, 0)), 16);
    }
    void lru_order() {
        PagePool pool(16, kPs);
        PrefixCache c(pool);
        Req old = start(c, pool, "A", seq(4, 0));
        finish(c, pool, old);
        Req recent = start(c, pool, "B", seq(4, 0));
        finish(c, pool, recent);
        Req touch = start(c, pool, "A", seq(4, 0));  // A becomes the most recent
        finish(c, pool, touch);
        QCOMPARE(c.evict(1), 1);
        QCOMPARE(c.match_length("A", seq(4, 0)), 4);
        QCOMPARE(c.match_length("B", seq(4, 0)), 0);
    }
    void namespace_eviction_frees_at_once_and_is_idempotent() {
        PagePool pool(32, kPs);
        PrefixCache c(pool);
        Req a = start(c, pool, "A", seq(20, 0));
        finish(c, pool, a);
        Req b = start(c, pool, "B", seq(8, 0));
        finish(c, pool, b);
        QCOMPARE(pool.n_free(), 32 - 7);
        c.evict_namespace("A");
        QCOMPARE(pool.n_free(), 32 - 2);
        QCOMPARE(c.stats("A").pages_held, 0);
        c.evict_namespace("A");
        c.evict_namespace("never-seen");
        QCOMPARE(pool.n_free(), 32 - 2);
        QCOMPARE(c.namespaces(), (std::vector<std::string>{"B"}));
    }
    void namespace_eviction_with_locked_pages_defers() {
        PagePool pool(32, kPs);
        PrefixCache c(pool);
        Req done = start(c, pool, "A", seq(8, 50));
        finish(c, pool, done);
        Req running = start(c, pool, "A", seq(10, 0));
        running.lock = c.extend(running.lock, running.tokens, running.pages);
        QCOMPARE(c.stats("A").pages_held, 4);
        c.evict_namespace("A");
        QCOMPARE(c.stats("A").pages_held, 2);          // the idle prefix went at once, the locked one stays
        QCOMPARE(c.match_length("A", seq(10, 0)), 0);  // but it is no longer matchable
        // The running request keeps decoding: nothing more is cached for the dropped namespace.
        running.tokens = seq(13, 0);
        pool.allocate(1, running.pages);
        running.lock = c.extend(running.lock, running.tokens, running.pages);
        QCOMPARE(c.stats("A").pages_held, 2);
        c.evict_namespace("A");
        finish(c, pool, running);
        QCOMPARE(c.stats("A").pages_held, 0);
        QCOMPARE(pool.n_free(), 32);
    }
    void preemption_and_recompute_keep_namespace() {
        PagePool pool(32, kPs);
        PrefixCache c(pool);
        Req other = start(c, pool, "B", seq(12, 0));
        finish(c, pool, other);
        Req r = start(c, pool, "A", seq(6, 0));
        r.tokens = seq(13, 0);  // prefill done, decoded up to 13 tokens
        pool.allocate(2, r.pages);
        finish(c, pool, r);  // preempted: pages go back through the cache
        Req again = start(c, pool, "A", seq(13, 0));
        QCOMPARE(again.hit, 12);
        QCOMPARE(PrefixCache::namespace_of(again.lock), std::string("A"));
        QCOMPARE(c.stats("A").hit_tokens, qint64(12));
        QCOMPARE(c.stats("B").hit_tokens, qint64(0));
        finish(c, pool, again);
    }
    void reloaded_adapter_never_hits_old_namespace() {
        PagePool pool(32, kPs);
        PrefixCache c(pool);
        Req v1 = start(c, pool, "sha-v1", seq(12, 0));
        finish(c, pool, v1);
        Req v2 = start(c, pool, "sha-v2", seq(12, 0));
        QCOMPARE(v2.hit, 0);
        finish(c, pool, v2);
        c.evict_namespace("sha-v1");
        Req v1b = start(c, pool, "sha-v1", seq(12, 0));
        QCOMPARE(v1b.hit, 0);
        finish(c, pool, v1b);
        c.clear();
        QCOMPARE(pool.n_free(), 32);
    }
    void misuse_is_an_error() {
        PagePool pool(4, kPs);
        PrefixCache c(pool);
        QVERIFY_THROWS_EXCEPTION(Error, c.release(nullptr));
        Req r = start(c, pool, "A", seq(4, 0));
        c.release(r.lock);
        QVERIFY_THROWS_EXCEPTION(Error, c.release(r.lock));
        pool.release_all(r.pages);
    }
    void randomized_against_naive_model_data() {
        QTest::addColumn<unsigned>("seed");
        for (unsigned s : {1u, 2u, 3u, 4u, 5u, 6u}) QTest::newRow(qPrintable(QString::number(s))) << s;
    }
    void randomized_against_naive_model();
};

namespace {

// The naive model of the randomized test: which full-page prefixes each live namespace may hold, what
// every page contains (namespace + the tokens up to its end), and the requests in flight.
struct Model {
    PagePool pool{48, kPs};
    PrefixCache cache{pool};
    std::map<std::string, std::set<std::vector<int32_t>>> prefixes;
    std::map<std::string, int> generation;
    std::vector<std::pair<std::string, std::vector<int32_t>>> content{48};
    struct Live {
        Req r;
        int gen = 0;
    };
    std::vector<Live> live;

    std::vector<int32_t> prefix(const std::vector<int32_t>& t, std::size_t n) const {
        return std::vector<int32_t>(t.begin(), t.begin() + std::ptrdiff_t(n));
    }
    // Writes KV for tokens [from, t.size()) of a request: only into pages nobody else can see.
    void write(Req& r, std::size_t from) {
        for (std::size_t i = from; i < r.tokens.size(); ++i) {
            int32_t p = r.pages[i / kPs];
            QCOMPARE(pool.ref_count(p), 1);
            content[std::size_t(p)] = {r.ns, prefix(r.tokens, std::min(r.tokens.size(), (i / kPs + 1) * kPs))};
        }
    }
    bool grow(Req& r, std::size_t n_tokens) {
        int need = pool.pages_for_tokens(int(n_tokens)) - int(r.pages.size());
        if (need > pool.n_free()) cache.evict(need - pool.n_free());
        return pool.allocate(std::max(need, 0), r.pages);
    }
    void start(const std::string& ns, std::vector<int32_t> tokens) {
        std::size_t longest = 0, locked_floor = 0;
        for (std::size_t n = kPs; n <= tokens.size(); n += kPs) {
            if (!prefixes[ns].count(prefix(tokens, n))) break;
            longest = n;
        }
        for (auto& l : live)
            if (l.r.ns == ns && l.gen == generation[ns]) {
                std::size_t d = std::size_t(PrefixCache::depth(l.r.lock)) * kPs;
                std::size_t k = 0;
                while (k < d && k < tokens.size() && l.r.tokens[k] == tokens[k]) ++k;
                locked_floor = std::max(locked_floor, k / kPs * kPs);
            }
        Live l;
        l.r.ns = ns;
        l.r.tokens = std::move(tokens);
        l.gen = generation[ns];
        PrefixMatch m = cache.acquire(ns, l.r.tokens);
        QVERIFY(std::size_t(m.n_tokens) <= longest);
        QVERIFY(std::size_t(m.n_tokens) >= locked_floor);
        QCOMPARE(PrefixCache::namespace_of(m.lock), ns);
        for (std::size_t i = 0; i < m.pages.size(); ++i)
            QCOMPARE(content[std::size_t(m.pages[i])], std::make_pair(ns, prefix(l.r.tokens, (i + 1) * kPs)));
        l.r.lock = m.lock;
        l.r.pages = m.pages;
        if (!grow(l.r, l.r.tokens.size())) {
            cache.release(l.r.lock);
            pool.release_all(l.r.pages);
            return;
        }
        write(l.r, std::size_t(m.n_tokens));
        live.push_back(std::move(l));
    }
    void extend(Live& l) {
        l.r.lock = cache.extend(l.r.lock, l.r.tokens, l.r.pages);
        QCOMPARE(PrefixCache::namespace_of(l.r.lock), l.r.ns);
        if (l.gen == generation[l.r.ns])
            for (std::size_t n = kPs; n <= l.r.tokens.size(); n += kPs) prefixes[l.r.ns].insert(prefix(l.r.tokens, n));
    }
    void finish(std::size_t i) {
        extend(live[i]);
        cache.release(live[i].r.lock);
        pool.release_all(live[i].r.pages);
        live.erase(live.begin() + std::ptrdiff_t(i));
    }
    void drop_namespace(const std::string& ns) {
        cache.evict_namespace(ns);
        prefixes[ns].clear();
        generation[ns]++;
    }
    void resync_after_evict() {
        // Not a structured binding: clang before 16 cannot capture one in a lambda (the sanitizer build uses clang 14).
        for (auto& entry : prefixes) {
            const std::string& ns = entry.first;
            std::erase_if(entry.second,
                          [&](const std::vector<int32_t>& p) { return cache.match_length(ns, p) < int(p.size()); });
        }
    }
    void check_accounting() {
        long refs = 0, expected = cache.n_cached_pages();
        for (int p = 0; p < pool.n_pages(); ++p) refs += pool.ref_count(p);
        for (auto& l : live) expected += long(l.r.pages.size());
        QCOMPARE(refs, expected);
        int held = 0;
        for (auto& [ns, g] : generation) held += cache.stats(ns).pages_held;
        QCOMPARE(held, cache.n_cached_pages());
        QVERIFY(cache.n_evictable_pages() <= cache.n_cached_pages());
    }
};

}  // namespace

void TstPrefixCache::randomized_against_naive_model() {
    QFETCH(unsigned, seed);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    const std::vector<std::string> spaces{"", "A", "B", "C"};
    Model m;
    for (auto& s : spaces) m.generation[s] = 0;
    for (int step = 0; step < 3000; ++step) {
        int op = pick(100);
        if (op < 25 && m.live.size() < 10) {
            std::vector<int32_t> t;
            int len = 1 + pick(22);
            int shared = pick(len + 1);
            for (int i = 0; i < len; ++i) t.push_back(i < shared ? (i * 7) % 5 : pick(3));
            m.start(spaces[std::size_t(pick(4))], std::move(t));
        } else if (op < 45 && !m.live.empty()) {
            auto& l = m.live[std::size_t(pick(int(m.live.size())))];
            std::size_t old = l.r.tokens.size();
            for (int k = 1 + pick(5); k > 0; --k) l.r.tokens.push_back(pick(3));
            if (m.grow(l.r, l.r.tokens.size()))
                m.write(l.r, old);
            else
                l.r.tokens.resize(old);
        } else if (op < 60 && !m.live.empty()) {
            m.extend(m.live[std::size_t(pick(int(m.live.size())))]);
        } else if (op < 78 && !m.live.empty()) {
            m.finish(std::size_t(pick(int(m.live.size()))));
        } else if (op < 83) {
            m.drop_namespace(op == 82 ? "unknown" : spaces[std::size_t(pick(4))]);
        } else if (op < 93) {
            int before = m.cache.n_cached_pages();
            int freed = m.cache.evict(1 + pick(6));
            QCOMPARE(m.cache.n_cached_pages(), before - freed);
            m.resync_after_evict();
        } else if (op < 95) {
            m.cache.clear();
            for (auto& s : spaces) m.drop_namespace(s);
        }
        if (QTest::currentTestFailed()) QFAIL(qPrintable(QString("failed at step %1").arg(step)));
        m.check_accounting();
        if (QTest::currentTestFailed()) QFAIL(qPrintable(QString("accounting failed at step %1").arg(step)));
    }
    while (!m.live.empty()) m.finish(m.live.size() - 1);
    m.cache.clear();
    QCOMPARE(m.cache.n_cached_pages(), 0);
    QCOMPARE(m.pool.n_free(), m.pool.n_pages());
}

QTEST_GUILESS_MAIN(TstPrefixCache)
#include "tst_prefix_cache.moc"
