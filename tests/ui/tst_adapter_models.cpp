// AdapterTableModel + AdapterFilterModel: model invariants under QAbstractItemModelTester, merge-by-name
// updates, numeric sorting and every filter of the Adapters view's filter bar.
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "scripted_engine.h"
#include "ui/models/adapter_filter_model.h"
#include "ui/models/adapter_table_model.h"

using namespace loradesk;
using loradesk::ui::AdapterFilterModel;
using loradesk::ui::AdapterTableModel;

class TestAdapterModels : public QObject {
    Q_OBJECT
  private slots:
    void displaysEveryColumn();
    void mergesSnapshotsByName();
    void sortsNumerically();
    void filters_data();
    void filters();
    void incompatibleAdapterExplainsWhy();
};

void TestAdapterModels::displaysEveryColumn() {
    AdapterTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    testing::ScriptedEngine engine(testing::desktop_fixture());
    model.setClock(1795000000 + 120);
    model.setAdapters(engine.adapters());
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.columnCount(), int(AdapterTableModel::ColumnCount));
    const int de = model.rowOf("de");
    QVERIFY(de >= 0);
    auto cell = [&](int col) { return model.index(de, col).data().toString(); };
    QCOMPARE(cell(AdapterTableModel::Name), QString("de (german)"));
    QCOMPARE(cell(AdapterTableModel::Rank), QString("8"));
    QCOMPARE(cell(AdapterTableModel::Alpha), QString("16"));
    QCOMPARE(cell(AdapterTableModel::Targets), QString("q_proj, k_proj, v_proj, o_proj"));
    QCOMPARE(cell(AdapterTableModel::Size), QString("8.0 MiB"));
    QCOMPARE(cell(AdapterTableModel::Tier), QString("GPU"));
    QCOMPARE(cell(AdapterTableModel::Pinned), QString("pinned"));
    QCOMPARE(cell(AdapterTableModel::Requests), QString("120"));
    QCOMPARE(cell(AdapterTableModel::Tokens), QString("4.8 k"));
    QCOMPARE(cell(AdapterTableModel::LastUsed), QString("2 min ago"));
    QCOMPARE(model.index(model.rowOf("it"), AdapterTableModel::LastUsed).data().toString(), QString("never"));
    QCOMPARE(model.baseModels(), QStringList({"Qwen/Qwen3-0.6B", "meta-llama/Llama-3.2-1B"}));
}

void TestAdapterModels::mergesSnapshotsByName() {
    AdapterTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    testing::ScriptedEngine engine(testing::desktop_fixture());
    model.setAdapters(engine.adapters());
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);

    model.setAdapters(engine.adapters());  // same snapshot: nothing changes
    QCOMPARE(changed.count() + removed.count() + inserted.count() + reset.count(), 0);

    QTemporaryDir folder;
    QVERIFY(QDir(folder.path()).mkpath("fr") &&
            QFile(folder.filePath("fr/adapter_config.json")).open(QIODevice::WriteOnly));
    QVERIFY(engine.pin_adapter("de", false).ok());
    QVERIFY(engine.remove_adapter("es").ok());
    QVERIFY(engine.import_adapters(folder.path().toStdString()).ok());
    const int deRow = model.rowOf("de");
    model.setAdapters(engine.adapters());
    QCOMPARE(reset.count(), 0);
    QCOMPARE(removed.count(), 1);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(model.rowOf("de"), deRow);  // earlier than es: keeps its row
    QCOMPARE(model.rowOf("es"), -1);
    QVERIFY(model.rowOf("fr") >= 0);
    QVERIFY(!model.adapterAt(model.rowOf("de"))->pinned);
}

void TestAdapterModels::sortsNumerically() {
    AdapterTableModel model;
    AdapterFilterModel proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    std::vector<api::AdapterInfo> rows = {testing::make_adapter("a", "b", 8, "gpu", false, 9),
                                          testing::make_adapter("c", "b", 16, "gpu", false, 1000),
                                          testing::make_adapter("d", "b", 64, "cpu", false, 80)};
    model.setAdapters(rows);
    proxy.sort(AdapterTableModel::Requests, Qt::DescendingOrder);
    QCOMPARE(proxy.index(0, 0).data(AdapterTableModel::NameRole).toString(), QString("c"));  // 1.0 k > 80 > 9
    QCOMPARE(proxy.index(1, 0).data(AdapterTableModel::NameRole).toString(), QString("d"));
    proxy.sort(AdapterTableModel::Rank, Qt::AscendingOrder);
    QCOMPARE(proxy.index(2, 0).data(AdapterTableModel::NameRole).toString(), QString("d"));  // 64 after 16
    proxy.sort(AdapterTableModel::Tier, Qt::AscendingOrder);
    QCOMPARE(proxy.index(2, 0).data(AdapterTableModel::NameRole).toString(), QString("d"));  // gpu before cpu
}

void TestAdapterModels::filters_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("base");
    QTest::addColumn<QString>("tier");
    QTest::addColumn<bool>("pinnedOnly");
    QTest::addColumn<QStringList>("expected");
    const QString qwen = "Qwen/Qwen3-0.6B";
    QTest::newRow("all") << ""
                         << ""
                         << "" << false << QStringList{"bofh", "de", "es", "it", "llama-sql"};
    QTest::newRow("name substring") << "S"
                                    << ""
                                    << "" << false << QStringList{"es", "llama-sql"};
    QTest::newRow("alias matches") << "germ"
                                   << ""
                                   << "" << false << QStringList{"de"};
    QTest::newRow("base model") << "" << qwen << "" << false << QStringList{"bofh", "de", "es", "it"};
    QTest::newRow("tier gpu") << ""
                              << ""
                              << "GPU" << false << QStringList{"bofh", "de"};
    QTest::newRow("tier disk + base") << "" << qwen << "disk" << false << QStringList{"it"};
    QTest::newRow("pinned") << ""
                            << ""
                            << "" << true << QStringList{"de"};
    QTest::newRow("nothing") << "zzz"
                             << ""
                             << "" << false << QStringList{};
}

void TestAdapterModels::filters() {
    QFETCH(QString, name);
    QFETCH(QString, base);
    QFETCH(QString, tier);
    QFETCH(bool, pinnedOnly);
    QFETCH(QStringList, expected);
    AdapterTableModel model;
    AdapterFilterModel proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    testing::ScriptedEngine engine(testing::desktop_fixture());
    model.setAdapters(engine.adapters());
    proxy.setNameFilter(name);
    proxy.setBaseModelFilter(base);
    proxy.setTierFilter(tier);
    proxy.setPinnedOnly(pinnedOnly);
    proxy.sort(AdapterTableModel::Name);
    QStringList got;
    for (int r = 0; r < proxy.rowCount(); ++r) got << proxy.index(r, 0).data(AdapterTableModel::NameRole).toString();
    QCOMPARE(got, expected);
}

void TestAdapterModels::incompatibleAdapterExplainsWhy() {
    AdapterTableModel model;
    testing::ScriptedEngine engine(testing::desktop_fixture());
    model.setAdapters(engine.adapters());
    const QModelIndex idx = model.index(model.rowOf("llama-sql"), AdapterTableModel::Name);
    QCOMPARE(idx.data(AdapterTableModel::CompatibleRole).toBool(), false);
    QVERIFY(idx.data(Qt::ToolTipRole).toString().contains("is it for another base model?"));
    QVERIFY(idx.data(Qt::ForegroundRole).isValid());
}

QTEST_GUILESS_MAIN(TestAdapterModels)
#include "tst_adapter_models.moc"
