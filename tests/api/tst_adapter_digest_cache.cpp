// engine/api with many adapter folders: the engine serves right after start while folders are hashed in
// the background (requests for a pending adapter wait for it, not for the whole scan), a warm catalog
// hashes nothing (counted), a changed file gives a new digest and only that folder is read again, a
// folder that cannot be read fails its requests with the reason, and a changed base or rank limit
// re-checks compatibility without hashing.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine_test_util.h"
#include "lora/adapter_loader.h"

using namespace loradesk;
namespace fs = std::filesystem;
using test::listed;
using test::run_request;

namespace {

constexpr int kAdapters = 200;

std::string name_of(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "lora-%03d", i);
    return buf;
}

std::map<std::string, std::string> digests(const api::Engine& engine) {
    std::map<std::string, std::string> out;
    for (auto& a : engine.adapters())
        if (a.compatible) out[a.name] = a.digest;
    return out;
}

int pending(const api::Engine& engine) {
    int n = 0;
    for (auto& a : engine.adapters()) n += a.compatible && a.digest.empty();
    return n;
}

}  // namespace

class TstAdapterDigestCache : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_model;
    model::ModelConfig m_config;
    fs::path m_root;
    std::string m_data;

    fs::path tmp() const { return fs::path(m_tmp.path().toStdString()); }

    // Returns as soon as the engine serves: folders not in the catalog are still being read.
    std::unique_ptr<api::Engine> start(int max_lora_rank = 64) {
        api::EngineOptions o = test::cpu_options(m_model, {m_root.string()});
        o.data_dir = m_data;
        o.max_lora_rank = max_lora_rank;
        return test::start_engine(o, false);
    }

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        m_model = (tmp() / "tiny-base").string();
        m_config = test::synth_tiny_model(m_model);
        m_root = tmp() / "adapters";
        m_data = (tmp() / "data").string();
        for (int i = 0; i < kAdapters; ++i) test::synth_adapter(m_config, m_root / name_of(i), uint64_t(100 + i), 8);
    }

    // The runs below share one catalog and build on each other, in this order.
    void cold_start_serves_while_hashing() {
        const uint64_t before = lora::adapter_digests_computed();
        auto engine = start();
        const int pending_at_start = pending(*engine);
        QCOMPARE(int(engine->adapters().size()), kAdapters);    // every name is served from the start
        QVERIFY(engine->pin_adapter(name_of(150), true).ok());  // most likely still being read: kept anyway
        // Requests for adapters still being read wait for them alone (moved to the front of the queue).
        for (int i : {kAdapters - 1, kAdapters / 2, 0}) {
            auto ran = run_request(*engine, name_of(i));
            QVERIFY2(ran.ok(), ran.status().message.c_str());
            QCOMPARE(ran.value(), listed(*engine, name_of(i))->digest);
        }
        test::impl(*engine).wait_adapters_read();
        QCOMPARE(pending(*engine), 0);
        QCOMPARE(int(lora::adapter_digests_computed() - before), kAdapters);
        QVERIFY2(pending_at_start > 0, "the start did not wait for the folders to be hashed");
        qInfo("%d of %d adapters were still being read when the engine started serving", pending_at_start, kAdapters);
    }

    void warm_start_hashes_nothing() {
        const uint64_t before = lora::adapter_digests_computed();
        auto engine = start();
        QCOMPARE(pending(*engine), 0);  // every digest came from the catalog
        QCOMPARE(int(digests(*engine).size()), kAdapters);
        QVERIFY(listed(*engine, name_of(150))->pinned);
        QVERIFY(run_request(*engine, name_of(17)).ok());
        test::impl(*engine).wait_adapters_read();
        QCOMPARE(int(lora::adapter_digests_computed() - before), 0);
    }

    void changed_files_are_read_again() {
        std::map<std::string, std::string> old;
        {
            auto engine = start();
            old = digests(*engine);
        }
        // New weights in one folder; only new times on another (same content).
        test::synth_adapter(m_config, m_root / name_of(7), 9999, 8);
        test::touch_forward(m_root / name_of(7), 3);
        test::touch_forward(m_root / name_of(8), 3);
        const uint64_t before = lora::adapter_digests_computed();
        auto engine = start();
        auto ran = run_request(*engine, name_of(7));
        QVERIFY2(ran.ok(), ran.status().message.c_str());
        test::impl(*engine).wait_adapters_read();
        QCOMPARE(int(lora::adapter_digests_computed() - before), 2);
        auto now = digests(*engine);
        QVERIFY(now[name_of(7)] != old[name_of(7)]);
        QCOMPARE(ran.value(), now[name_of(7)]);
        QCOMPARE(now[name_of(8)], old[name_of(8)]);
        now.erase(name_of(7));
        old.erase(name_of(7));
        QCOMPARE(now, old);
    }

    void other_limits_recheck_without_hashing() {
        const uint64_t before = lora::adapter_digests_computed();
        {
            auto engine = start(4);  // below the adapters' rank 8: none fits
            test::impl(*engine).wait_adapters_read();
            QCOMPARE(int(digests(*engine).size()), 0);
            auto a = listed(*engine, name_of(3));
            QVERIFY(a && !a->compatible);
            QVERIFY2(a->incompatibility.find("--max-lora-rank") != std::string::npos, a->incompatibility.c_str());
            Status s = run_request(*engine, name_of(3)).status();
            QCOMPARE(s.code, ErrorCode::not_found);
            QVERIFY2(s.message.find("is not served: ") != std::string::npos, s.message.c_str());
        }
        auto engine = start();
        test::impl(*engine).wait_adapters_read();
        QCOMPARE(int(digests(*engine).size()), kAdapters);
        QCOMPARE(int(lora::adapter_digests_computed() - before), 0);
    }

    void unreadable_folder_fails_its_requests() {
        const fs::path broken = m_root / "zz-broken";
        test::synth_adapter(m_config, broken, 5, 8);
        std::ofstream(broken / "adapter_model.safetensors", std::ios::trunc) << "garbage, not safetensors";
        auto engine = start();
        Status s = run_request(*engine, "zz-broken").status();  // waits for its read, then the reason
        QCOMPARE(s.code, ErrorCode::not_found);
        QVERIFY2(s.message.find("adapter 'zz-broken' is not served: corrupt safetensors file") != std::string::npos,
                 s.message.c_str());
        test::impl(*engine).wait_adapters_read();
        auto a = listed(*engine, "zz-broken");
        QVERIFY(a && !a->compatible);
        QCOMPARE(test::count_listed(*engine, "zz-broken"), 1);
        QCOMPARE(run_request(*engine, "zz-broken").status().message, s.message);
        fs::remove_all(broken);
    }
};

QTEST_GUILESS_MAIN(TstAdapterDigestCache)
#include "tst_adapter_digest_cache.moc"
