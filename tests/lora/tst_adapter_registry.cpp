// engine/lora AdapterRegistry: names, aliases, ids, pins, unload while requests run, reload with new
// content, and concurrent acquire/release from several threads.
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
        QVERIFY(error_of([&] { r.add_alias("a", "beta"); }).startsWith("conflict: alias 'a' already points to adapter 'alpha'"));
        QVERIFY(error_of([&] { r.add_alias("beta", "alpha"); }).startsWith("conflict"));
        QVERIFY(error_of([&] { r.add("a", summary("d3")); }).startsWith("conflict: 'a' is already an alias"));
        QVERIFY(error_of([&] { r.add_alias("x", "nobody"); }).startsWith("not_found"));
        QCOMPARE(error_of([&] { r.acquire("gamma"); }),
                 QString("not_found: adapter 'gamma' not found (loaded adapters: alpha, alpha-copy, beta)"));
        r.remove_alias("a");
        QVERIFY(!r.find("a"));
        QCOMPARE(int(r.list().size()), 3);
        // Re-adding the same content keeps the id; ids are reused only after a digest is freed.
        QCOMPARE(r.add("beta", summary("d2")).id, 2);
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
        auto v2 = r.add("alpha", summary("new"));
        QVERIFY(v2.id != v1.id);  // never reuse anything of the old identity
        QCOMPARE(r.acquire("alpha").digest(), std::string("new"));
        QCOMPARE(running.digest(), std::string("old"));  // the running request keeps its adapter
        QVERIFY(freed.empty());
        running.release();
        QCOMPARE(freed, std::vector<std::string>{"old"});
        // Reload without a request in flight frees the old content at once.
        r.add("alpha", summary("newer"));
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
};

QTEST_GUILESS_MAIN(TstAdapterRegistry)
#include "tst_adapter_registry.moc"
