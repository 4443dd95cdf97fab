// The Models page's tables without widgets: scanHubCache over a cache written in transformers' layout (models
// and adapters, branches and commits, an interrupted download, folders that are not model repositories) and
// HubCacheModel / HubSearchModel under QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QTemporaryDir>
#include <QTest>

#include "hf_cache_writer.h"
#include "ui/models/hub_cache_model.h"
#include "ui/models/hub_search_model.h"

using namespace loradesk;
using namespace loradesk::ui;

namespace {

const QString kCommitA(40, QChar('a'));
const QString kCommitB(40, QChar('b'));
const QString kCommitC(40, QChar('c'));

}  // namespace

class TestHubCacheModel : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void scanFindsModelsAndAdapters();
    void scanMarksInterruptedDownloads();
    void scanOfMissingFolderIsEmpty();
    void cacheModelColumnsAndRoles();
    void searchModelSizesArriveLater();

  private:
    QTemporaryDir m_dir;
    QString m_cache;
    int m_n = 0;
};

// A fresh cache per test: a model with two revisions (main and v2), an adapter of it, and what a scan skips.
void TestHubCacheModel::init() {
    m_cache = m_dir.filePath(QString("cache-%1").arg(++m_n));
    testing::writeCachedRepo(
        m_cache, "acme/fortune", kCommitA,
        {{"config.json", R"({"model_type": "qwen3"})"}, {"model.safetensors", QByteArray(1000, 'w')}});
    testing::writeCachedRepo(
        m_cache, "acme/fortune", kCommitB,
        {{"config.json", R"({"model_type": "qwen3", "v": 2})"}, {"sub/model.safetensors", QByteArray(500, 'v')}},
        {"v2"});
    testing::writeCachedRepo(
        m_cache, "acme/bofh-lora", kCommitC,
        {{"adapter_config.json", R"({"peft_type": "LORA", "base_model_name_or_path": "acme/fortune"})"},
         {"adapter_model.safetensors", QByteArray(300, 'a')}});
    QVERIFY(testing::writeFile(m_cache + "/datasets--acme--data/refs/main", kCommitA.toLatin1()));
    QVERIFY(QDir().mkpath(m_cache + "/models--not-a-repo"));
    QVERIFY(QDir().mkpath(m_cache + "/.locks/models--acme--fortune"));
}

void TestHubCacheModel::scanFindsModelsAndAdapters() {
    const QList<CachedRepo> repos = scanHubCache(m_cache);
    QCOMPARE(repos.size(), 2);
    const CachedRepo& adapter = repos[0];  // sorted by id
    QCOMPARE(adapter.id, QString("acme/bofh-lora"));
    QCOMPARE(adapter.kind, CachedRepo::Kind::adapter);
    QCOMPARE(adapter.baseModel, QString("acme/fortune"));
    QCOMPARE(adapter.commit, kCommitC);
    QCOMPARE(adapter.refs, QStringList{"main"});
    const int configBytes =
        int(QByteArray(R"({"peft_type": "LORA", "base_model_name_or_path": "acme/fortune"})").size());
    QCOMPARE(adapter.bytes, qint64(300 + configBytes));

    const CachedRepo& model = repos[1];
    QCOMPARE(model.id, QString("acme/fortune"));
    QCOMPARE(model.kind, CachedRepo::Kind::model);
    QCOMPARE(model.commit, kCommitA);  // refs/main wins over the newer v2 snapshot
    QCOMPARE(model.snapshot, m_cache + "/models--acme--fortune/snapshots/" + kCommitA);
    QCOMPARE(model.refs, QStringList{"main"});
    QCOMPARE(model.nSnapshots, 2);
    QVERIFY(model.bytes > 1500);  // both revisions' blobs, each once
    QVERIFY(!model.incomplete);
    QVERIFY(model.modified.isValid());
}

void TestHubCacheModel::scanMarksInterruptedDownloads() {
    QVERIFY(testing::writeFile(m_cache + "/models--acme--fortune/blobs/" + QString(64, 'f') + ".incomplete",
                               QByteArray(4096, 'x')));
    // Without refs/main (a pull by commit), the newest snapshot is shown.
    QVERIFY(QFile::remove(m_cache + "/models--acme--fortune/refs/main"));
    const CachedRepo r = scanCachedRepo(m_cache + "/models--acme--fortune");
    QVERIFY(r.incomplete);
    QVERIFY(r.bytes < 4096);  // the partial file is not counted
    QVERIFY(r.commit == kCommitA || r.commit == kCommitB);
    QVERIFY(r.refs.isEmpty() || r.refs == QStringList{"v2"});
}

void TestHubCacheModel::scanOfMissingFolderIsEmpty() {
    QVERIFY(scanHubCache(m_dir.filePath("nowhere")).isEmpty());
    QVERIFY(scanCachedRepo(m_cache + "/models--not-a-repo").id.isEmpty());
}

void TestHubCacheModel::cacheModelColumnsAndRoles() {
    HubCacheModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRepos(scanHubCache(m_cache));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(HubCacheModel::ColumnCount));
    const int row = model.rowOf("acme/fortune");
    QVERIFY(row >= 0);
    QCOMPARE(model.index(row, HubCacheModel::Kind).data().toString(), QString("Model"));
    QCOMPARE(model.index(row, HubCacheModel::Revision).data().toString(), QString("main · aaaaaaa (+1 more)"));
    QVERIFY(model.index(row, HubCacheModel::Size).data().toString().endsWith("B"));
    QCOMPARE(model.index(row, 0).data(HubCacheModel::KindRole).toString(), QString("model"));
    QCOMPARE(model.index(row, 0).data(HubCacheModel::CommitRole).toString(), kCommitA);
    QVERIFY(model.index(row, HubCacheModel::Size).data(HubCacheModel::SortRole).toLongLong() > 1500);
    const int adapter = model.rowOf("acme/bofh-lora");
    QCOMPARE(model.index(adapter, HubCacheModel::BaseModel).data().toString(), QString("acme/fortune"));
    QCOMPARE(model.modelIds(), QStringList{"acme/fortune"});
    QCOMPARE(model.rowOf("acme/missing"), -1);
    model.setRepos({});
    QCOMPARE(model.rowCount(), 0);
}

void TestHubCacheModel::searchModelSizesArriveLater() {
    HubSearchModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setListings({{"acme/fortune", false, 1500, 12, -1}, {"acme/bofh-lora", true, 40, 3, -1}});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(0, HubSearchModel::Kind).data().toString(), QString("Model"));
    QCOMPARE(model.index(1, HubSearchModel::Kind).data().toString(), QString("Adapter"));
    QCOMPARE(model.index(0, HubSearchModel::Size).data().toString(), QString("…"));
    QCOMPARE(model.index(0, HubSearchModel::Downloads).data(HubSearchModel::SortRole).toLongLong(), 1500);
    model.setSize("acme/bofh-lora", 2048);
    model.setSize("acme/unknown", 1);  // a listing that is gone: ignored
    QCOMPARE(model.index(1, HubSearchModel::Size).data(HubSearchModel::SortRole).toLongLong(), 2048);
    QCOMPARE(model.ids(), (QStringList{"acme/fortune", "acme/bofh-lora"}));
}

QTEST_GUILESS_MAIN(TestHubCacheModel)
#include "tst_hub_cache_model.moc"
