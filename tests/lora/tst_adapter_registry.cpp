// engine/lora AdapterRegistry: names, aliases, ids, pins, taken names, per-name paths, pending names
// (waiting, resolving, failing, timing out), unload while requests run, reload with new content,
// concurrent acquire/release from several threads, and 10,000 names.
#include <QtTest>

#include <thread>

#include "core/error.h"
#include "lora/adapter_registry.h"

using namespace loradesk;
using namespace loradesk::lora;

namespace {

AdapterSummary summary(const std::string& digest) {
    AdapterSummary s;
    s.digest = digest;
    s.name = "folder_" + digest;
    s.path = "/adapters/folder_" + digest;
    return s;
}

QString error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ExpectedError& e) {
        return QString::fromStdString(std::string(error_code_name(e.code())) + ": " + e.what());
    }
    return {};
}

}  // namespace

class TstAdapterRegistry : public QObject {
    Q_OBJECT
  private slots:
    void names_aliases_ids() {
        AdapterRegistry r;
        auto a = r.add("alpha", summary("d1"));
        auto b = r.add("beta", summary("d2"));
        QCOMPARE(a.id, 1);
        QCOMPARE(b.id, 2);
        // Same content under a second name shares the digest and id.
        QCOMPARE(r.add("alpha-copy", summary("d1")).id, 1);
        r.add_alias("a", "alpha");
        QCOMPARE(r.find("a")->name, std::string("alpha"));
        QCOMPARE(r.find("a")->summary.digest, std::string("d1"));
        QCOMPARE(r.find("alpha")->aliases, std::vector<std::string>{"a"});
        QVERIFY(error_of([&] {
                    r.add_alias("a", "beta");
                }).startsWith("conflict: alias 'a' already points to adapter 'alpha'"));
        QVERIFY(error_of([&] { r.add_alias("beta", "alpha"); }).startsWith("conflict"));
        QVERIFY(error_of([&] { r.add("a", summary("d3")); }).startsWith("conflict: 'a' is already an alias"));
        QVERIFY(error_of([&] { r.add_alias("x", "nobody"); }).startsWith("not_found"));
        QCOMPARE(error_of([&] { r.acquire("gamma"); }),
                 QString("not_found: adapter 'gamma' not found (loaded adapters: alpha, alpha-copy, beta)"));
        r.remove_alias("a");
        QVERIFY(!r.find("a"));
        QCOMPARE(int(r.list().size()), 3);
        // A taken name is refused; replacing with the same content keeps the id; ids are reused only
        // after a digest is freed.
        QVERIFY(error_of([&] {
                    r.add("beta", summary("d2"));
                }).startsWith("conflict: an adapter named 'beta' is already loaded from '/adapters/folder_d2'"));
        QVERIFY(error_of([&] { r.add("beta", summary("d7")); }).startsWith("conflict"));
        QCOMPARE(r.find("beta")->summary.digest, std::string("d2"));  // not re-pointed
        QCOMPARE(r.add("beta", summary("d2"), OnTaken::replace).id, 2);
        r.unload("beta");
        QCOMPARE(r.add("gamma", summary("d9")).id, 2);
    }

    void pins() {
        AdapterRegistry r;
        r.add("alpha", summary("d1"));
        r.add_alias("a", "alpha");
        QVERIFY(!r.is_pinned_digest("d1"));
        r.set_pinned("a", true);
        QVERIFY(r.find("alpha")->pinned);
        QVERIFY(r.is_pinned_digest("d1"));
        r.set_pinned("alpha", false);
        QVERIFY(!r.is_pinned_digest("d1"));
        QVERIFY(error_of([&] { r.set_pinned("zzz", true); }).startsWith("not_found"));
    }

    void unload_while_requests_run() {
        AdapterRegistry r;
        std::vector<std::string> freed;
        r.set_on_freed([&](const std::string& d) { freed.push_back(d); });
        r.add("alpha", summary("d1"));
        r.add_alias("a", "alpha");
        AdapterLease l1 = r.acquire("alpha");
        AdapterLease l2 = r.acquire("a");
        QCOMPARE(l1.digest(), std::string("d1"));
        QCOMPARE(r.in_flight("d1"), 2);
        r.unload("alpha");
        QVERIFY(freed.empty());  // still in use
        QCOMPARE(error_of([&] { r.acquire("alpha"); }), QString("not_found: adapter 'alpha' was unloaded"));
        QCOMPARE(error_of([&] { r.acquire("a"); }), QString("not_found: adapter 'a' was unloaded"));
        QVERIFY(r.find_digest("d1"));  // draining, still known by digest
        l1.release();
        QVERIFY(freed.empty());
        { AdapterLease moved = std::move(l2); }
        QCOMPARE(freed, std::vector<std::string>{"d1"});
        QVERIFY(!r.find_digest("d1"));
        QCOMPARE(r.in_flight("d1"), 0);
        // Registering the name again clears the "was unloaded" state.
        r.add("alpha", summary("d1"));
        QVERIFY(r.acquire("alpha"));
    }

    void unload_idle_frees_at_once() {
        AdapterRegistry r;
        std::vector<std::string> freed;
        r.set_on_freed([&](const std::string& d) { freed.push_back(d); });
        r.add("alpha", summary("d1"));
        r.add("alpha2", summary("d1"));
        r.unload("alpha");
        QVERIFY(freed.empty());  // still registered under alpha2
        r.unload("alpha2");
        QCOMPARE(freed, std::vector<std::string>{"d1"});
        QVERIFY(error_of([&] { r.unload("alpha2"); }).startsWith("not_found"));
    }

    void reload_with_new_content() {
        AdapterRegistry r;
        std::vector<std::string> freed;
        r.set_on_freed([&](const std::string& d) { freed.push_back(d); });
        auto v1 = r.add("alpha", summary("old"));
        AdapterLease running = r.acquire("alpha");
        auto v2 = r.add("alpha", summary("new"), OnTaken::replace);
        QVERIFY(v2.id != v1.id);  // never reuse anything of the old identity
        QCOMPARE(r.acquire("alpha").digest(), std::string("new"));
        QCOMPARE(running.digest(), std::string("old"));  // the running request keeps its adapter
        QVERIFY(freed.empty());
        running.release();
        QCOMPARE(freed, std::vector<std::string>{"old"});
        // Reload without a request in flight frees the old content at once.
        r.add("alpha", summary("newer"), OnTaken::replace);
        QCOMPARE(freed, (std::vector<std::string>{"old", "new"}));
    }

    void concurrent_acquire_release() {
        AdapterRegistry r;
        std::atomic<int> freed{0};
        r.set_on_freed([&](const std::string&) { freed++; });
        r.add("alpha", summary("d1"));
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&] {
                for (int i = 0; i < 2000; ++i) {
                    try {
                        AdapterLease l = r.acquire("alpha");
                    } catch (const ExpectedError&) {
                    }
                }
            });
        r.unload("alpha");
        for (auto& t : threads) t.join();
        QCOMPARE(freed.load(), 1);
        QCOMPARE(r.in_flight("d1"), 0);
    }

    void names_are_checked_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("empty") << "";
        QTest::newRow("space") << "my adapter";
        QTest::newRow("slash") << "a/b";
        QTest::newRow("newline") << "de\nforged log line";
        QTest::newRow("base") << "base";
        QTest::newRow("dot") << ".";
        QTest::newRow("dotdot") << "..";
        QTest::newRow("base prefix") << "base:x";
        QTest::newRow("129 characters") << QString(129, 'a');
    }
    void names_are_checked() {
        QFETCH(QString, name);
        AdapterRegistry r;
        QVERIFY(error_of([&] { r.add(name.toStdString(), summary("d1")); }).startsWith("invalid_argument"));
        QVERIFY(error_of([&] { r.add_pending(name.toStdString(), "/x"); }).startsWith("invalid_argument"));
        r.add("ok", summary("d1"));
        QVERIFY(error_of([&] { r.add_alias(name.toStdString(), "ok"); }).startsWith("invalid_argument"));
        QCOMPARE(int(r.list().size()), 1);
    }
    void nul_in_a_name_is_refused() {
        AdapterRegistry r;
        const std::string with_nul("de\0x", 4);
        QString e = error_of([&] { r.add(with_nul, summary("d1")); });
        QVERIFY2(e.contains("'de\\x00x' is not allowed") && e.contains("A-Z a-z 0-9 . _ : -"), qPrintable(e));
    }

    void paths_are_per_name() {
        // Two folders with identical content: one identity (digest, id), each name keeps its own folder.
        AdapterRegistry r;
        AdapterSummary a = summary("d1"), b = summary("d1");
        a.path = "/adapters/de";
        b.path = "/adapters/de-copy";
        auto ra = r.add("de", a), rb = r.add("de-copy", b);
        QCOMPARE(ra.id, rb.id);
        QCOMPARE(r.find("de")->summary.path, std::string("/adapters/de"));
        QCOMPARE(r.find("de-copy")->summary.path, std::string("/adapters/de-copy"));
        QCOMPARE(r.find("de-copy")->summary.name, std::string("de-copy"));
        auto sources = r.sources("d1");
        QCOMPARE(int(sources.size()), 2);
        QVERIFY(sources[0].path != sources[1].path);
        // The copy changes: only the copy's name moves to the new content.
        AdapterSummary changed = summary("d2");
        changed.path = "/adapters/de-copy";
        r.add("de-copy", changed, OnTaken::replace);
        QCOMPARE(r.find("de")->summary.digest, std::string("d1"));
        QCOMPARE(r.find("de-copy")->summary.digest, std::string("d2"));
        QCOMPARE(int(r.sources("d1").size()), 1);
        QCOMPARE(r.sources("d1")[0].path, std::string("/adapters/de"));
    }

    void created_time() {
        AdapterRegistry r;
        r.add("a", summary("d1"), OnTaken::refuse, 1700000000);
        QCOMPARE(r.find("a")->created_unix, int64_t(1700000000));
        r.add("a", summary("d1"), OnTaken::replace);  // same content: same time
        QCOMPARE(r.find("a")->created_unix, int64_t(1700000000));
        r.add("a", summary("d2"), OnTaken::replace);  // new content: now
        QVERIFY(r.find("a")->created_unix > 1700000000);
    }

    void pending_name_resolves_for_waiting_requests() {
        AdapterRegistry r;
        const uint64_t ticket = r.add_pending("p", "/adapters/p");
        QCOMPARE(int(r.pending_count()), 1);
        auto listed = r.list();
        QCOMPARE(int(listed.size()), 1);
        QVERIFY(listed[0].pending);
        QCOMPARE(listed[0].summary.path, std::string("/adapters/p"));
        QVERIFY(listed[0].summary.digest.empty());
        QVERIFY(error_of([&] { r.acquire("p"); }).startsWith("unavailable: adapter 'p' is still being read"));
        QVERIFY(error_of([&] { r.add("p", summary("d9")); }).startsWith("conflict"));
        r.add_alias("pp", "p");
        r.set_pinned("p", true);
        std::string got;
        std::thread waiter([&] { got = r.acquire("pp", std::chrono::seconds(30)).digest(); });
        QTest::qWait(50);
        QVERIFY(got.empty());
        QVERIFY(r.resolve_pending("p", ticket, summary("d1")));
        waiter.join();
        QCOMPARE(got, std::string("d1"));
        QCOMPARE(int(r.pending_count()), 0);
        QVERIFY(r.find("p")->pinned);
        QVERIFY(r.is_pinned_digest("d1"));
        QCOMPARE(r.find("p")->summary.path, std::string("/adapters/folder_d1"));
        QVERIFY(!r.resolve_pending("p", ticket, summary("d2")));  // once only
    }

    void pending_name_fails_or_times_out() {
        AdapterRegistry r;
        const uint64_t ticket = r.add_pending("broken", "/adapters/broken");
        r.add_alias("b", "broken");
        QString waited;
        std::thread waiter([&] { waited = error_of([&] { r.acquire("broken", std::chrono::seconds(30)); }); });
        QTest::qWait(50);
        QVERIFY(r.fail_pending("broken", ticket, ErrorCode::corrupt_file, "adapter 'broken': not a safetensors file"));
        waiter.join();
        QCOMPARE(waited, QString("corrupt_file: adapter 'broken': not a safetensors file"));
        QCOMPARE(error_of([&] { r.acquire("broken"); }), waited);  // later requests: the same reason
        QCOMPARE(error_of([&] { r.acquire("b"); }), waited);
        QVERIFY(!r.find("broken"));
        r.add("broken", summary("d1"));  // fixed: registered again, the failure is forgotten
        QVERIFY(r.acquire("broken"));

        const uint64_t t2 = r.add_pending("slow", "/adapters/slow");
        auto start = std::chrono::steady_clock::now();
        QVERIFY(error_of([&] { r.acquire("slow", std::chrono::milliseconds(100)); }).startsWith("unavailable"));
        QVERIFY(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(100));
        // Unloaded while pending: the late result is dropped.
        r.unload("slow");
        QVERIFY(!r.resolve_pending("slow", t2, summary("d3")));
        QVERIFY(!r.find("slow"));
        // Replaced while pending (the folder watch re-read it): the old ticket is stale.
        const uint64_t t3 = r.add_pending("w", "/adapters/w");
        r.add("w", summary("d4"), OnTaken::replace);
        QVERIFY(!r.resolve_pending("w", t3, summary("d5")));
        QCOMPARE(r.find("w")->summary.digest, std::string("d4"));
    }

    void ten_thousand_names() {
        AdapterRegistry r;
        QElapsedTimer t;
        t.start();
        for (int i = 0; i < 10000; ++i) {
            const std::string n = std::to_string(i);
            r.add(std::string("a").append(n), summary(std::string("d").append(n)));
        }
        QCOMPARE(r.find("a9999")->id, 10000);
        for (int i = 0; i < 10; ++i) QCOMPARE(int(r.list().size()), 10000);
        r.unload("a5");
        r.unload("a3");
        QCOMPARE(r.add("b", summary("new")).id, 4);  // the smallest free id
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString("%1 ms").arg(t.elapsed())));
        QString e = error_of([&] { r.acquire("nope"); });
        QVERIFY2(e.endsWith("and 9989 more)"), qPrintable(e));  // a bounded message
    }
};

QTEST_GUILESS_MAIN(TstAdapterRegistry)
#include "tst_adapter_registry.moc"
