// `loradeskd pull` against tests/hub/fake_hub.py (the Hub's endpoints and response shapes, on 127.0.0.1), and
// the cache it writes as transformers and vLLM read it: a fresh pull, resuming an interrupted transfer with a
// Range request, a checksum mismatch leaving nothing that looks complete, a gated repository without and with
// a token, revisions by branch and by commit, --include, HF_HUB_OFFLINE, and `serve --model org/name` (plus
// --adapter NAME=ID and load_lora_adapter with a Hub id) resolving from the cache.
#include <QCryptographicHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "fake_hub_process.h"
#include "hub/download/pull.h"
#include "server/socket_client.h"

using namespace loradesk::testing;
namespace fs = std::filesystem;

namespace {

const QString kModelDir = LORADESK_SOURCE_DIR "/resources/demo/fortune-6m";
const QString kAdapterDir = LORADESK_SOURCE_DIR "/resources/demo/adapters/bofh";
constexpr qint64 kModelBytes = 12598424;  // resources/demo/fortune-6m/model.safetensors

QByteArray file_bytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString sha256_hex(const QByteArray& data) {
    return QString::fromLatin1(QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex());
}

QString git_blob_hex(const QByteArray& data) {
    return QString::fromLatin1(
        QCryptographicHash::hash("blob " + QByteArray::number(data.size()) + '\0' + data, QCryptographicHash::Sha1)
            .toHex());
}

// The blob name huggingface_hub uses: sha256 for LFS files, the git blob id for the others.
QString blob_name(const QString& path) {
    const QByteArray data = file_bytes(path);
    return path.endsWith(".safetensors") ? sha256_hex(data) : git_blob_hex(data);
}

struct Run {
    int code = -1;
    QString output;
};

}  // namespace

class TstHubPull : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_cache;
    int m_n = 0;

    QProcessEnvironment env(const FakeHub* hub, const QString& token = {}) const {
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        for (const char* k :
             {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_HOME", "HF_TOKEN_PATH", "LORADESK_API_KEY",
              "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
            e.remove(k);
        e.insert("HF_HUB_CACHE", m_cache);
        e.insert("HF_HOME", m_dir.path() + "/hf-home");  // no token file of the user's
        if (hub) e.insert("HF_ENDPOINT", hub->endpoint());
        if (!token.isEmpty()) e.insert("HF_TOKEN", token);
        return e;
    }
    Run loradeskd(const QStringList& args, const QProcessEnvironment& e) {
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.setProcessEnvironment(e);
        p.start(LORADESKD, args);
        p.waitForFinished(120000);
        Run r;
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.output = QString::fromUtf8(p.readAll());
        return r;
    }
    QString repo_dir(const QString& repo = "acme/fortune") const {
        return m_cache + "/models--" + QString(repo).replace("/", "--");
    }
    QString ref(const QString& name, const QString& repo = "acme/fortune") const {
        return QString::fromLatin1(file_bytes(repo_dir(repo) + "/refs/" + name));
    }
    QStringList incomplete_files() const {
        return QDir(repo_dir() + "/blobs").entryList({"*.incomplete"}, QDir::Files);
    }
    QString log_path() { return m_dir.path() + QString("/hub-%1.log").arg(++m_n); }

  private slots:
    void init() { m_cache = m_dir.path() + QString("/cache-%1").arg(++m_n); }

    void fresh_pull_writes_huggingface_hub_layout() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir}));
        const Run r = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(r.code == 0, qPrintable(r.output));
        QVERIFY2(r.output.contains("6 files downloaded"), qPrintable(r.output));
        const QString commit = ref("main");
        QCOMPARE(commit.size(), 40);
        QVERIFY(r.output.contains(commit));
        const QString snapshot = repo_dir() + "/snapshots/" + commit;
        for (const QString& name : QDir(kModelDir).entryList(QDir::Files)) {
            const fs::path link = (snapshot + "/" + name).toStdString();
            QVERIFY2(fs::is_symlink(link), qPrintable(name));
            QCOMPARE(QString::fromStdString(fs::read_symlink(link).string()),
                     "../../blobs/" + blob_name(kModelDir + "/" + name));
            QVERIFY(file_bytes(snapshot + "/" + name) == file_bytes(kModelDir + "/" + name));
        }
        QVERIFY(incomplete_files().isEmpty());
        // Everything is cached now: nothing is downloaded again.
        const Run again = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(again.code == 0 && again.output.contains("0 files downloaded (0 B), 6 already cached"),
                 qPrintable(again.output));
    }

    void include_selects_files() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir}));
        const Run r = loradeskd({"pull", "acme/fortune", "--include", "*.json", "--include", "*.jinja"}, env(&hub));
        QVERIFY2(r.code == 0, qPrintable(r.output));
        const QString snapshot = repo_dir() + "/snapshots/" + ref("main");
        QVERIFY(QFile::exists(snapshot + "/config.json"));
        QVERIFY(QFile::exists(snapshot + "/tokenizer.json"));
        QVERIFY(QFile::exists(snapshot + "/chat_template.jinja"));
        QVERIFY(!QFile::exists(snapshot + "/model.safetensors"));
        const Run none = loradeskd({"pull", "acme/fortune", "--include", "*.gguf"}, env(&hub));
        QVERIFY2(none.code != 0 && none.output.contains("no file of acme/fortune matches --include") &&
                     none.output.contains("model.safetensors"),
                 qPrintable(none.output));
    }

    void revision_by_branch_and_by_commit() {
        QTemporaryDir v2;
        fs::copy(kModelDir.toStdString() + "/config.json", v2.path().toStdString() + "/config.json");
        std::ofstream(v2.path().toStdString() + "/NOTES.md") << "revision two\n";
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir, "--repo", "acme/fortune@v2=" + v2.path()}));
        const Run r = loradeskd({"pull", "acme/fortune", "--revision", "v2"}, env(&hub));
        QVERIFY2(r.code == 0, qPrintable(r.output));
        const QString v2_commit = ref("v2");
        QCOMPARE(v2_commit.size(), 40);
        QVERIFY(!QFile::exists(repo_dir() + "/refs/main"));
        QVERIFY(QFile::exists(repo_dir() + "/snapshots/" + v2_commit + "/NOTES.md"));

        QVERIFY(loradeskd({"pull", "acme/fortune", "--include", "config.json"}, env(&hub)).code == 0);
        const QString main_commit = ref("main");
        QVERIFY(main_commit != v2_commit);
        // By commit: the snapshot is filled, and no ref is written for a commit.
        fs::remove_all((repo_dir() + "/snapshots/" + main_commit).toStdString());
        const Run by_commit = loradeskd({"pull", "acme/fortune@" + main_commit, "--include", "*.json"}, env(&hub));
        QVERIFY2(by_commit.code == 0, qPrintable(by_commit.output));
        QVERIFY(QFile::exists(repo_dir() + "/snapshots/" + main_commit + "/tokenizer.json"));
        QVERIFY(!QFile::exists(repo_dir() + "/refs/" + main_commit));
        // The config blob is shared by both revisions: stored once.
        QCOMPARE(
            QDir(repo_dir() + "/blobs").entryList(QDir::Files).filter(blob_name(kModelDir + "/config.json")).size(), 1);
        const Run missing = loradeskd({"pull", "acme/fortune", "--revision", "nope"}, env(&hub));
        QVERIFY2(missing.code != 0 && missing.output.contains("check --revision"), qPrintable(missing.output));
    }

    // A dropped connection is retried within the run with a Range request from where it stopped.
    void resumes_within_a_run() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir, "--drop-after", "1000000", "--drop-times", "1"},
                          log_path()));
        const Run r = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(r.code == 0, qPrintable(r.output));
        bool ranged = false;
        for (const QJsonObject& q : hub.requests())
            ranged |= q["path"].toString().startsWith("/cdn/") && q["range"].toString() == "bytes=1000000-";
        QVERIFY(ranged);
        QVERIFY(file_bytes(repo_dir() + "/snapshots/" + ref("main") + "/model.safetensors") ==
                file_bytes(kModelDir + "/model.safetensors"));
    }

    // A transfer that keeps failing leaves only blobs/<sha>.incomplete; the next pull resumes it.
    void interrupted_pull_resumes_next_time() {
        const QString sha = sha256_hex(file_bytes(kModelDir + "/model.safetensors"));
        {
            FakeHub hub;
            QVERIFY(
                hub.start({"--repo", "acme/fortune=" + kModelDir, "--drop-after", "3000000", "--drop-times", "-1"}));
            const Run r = loradeskd({"pull", "acme/fortune"}, env(&hub));
            QVERIFY2(r.code != 0 && r.output.contains("run the pull again to resume"), qPrintable(r.output));
        }
        const QString partial = repo_dir() + "/blobs/" + sha + ".incomplete";
        QVERIFY(QFile::exists(partial));
        const qint64 have = QFileInfo(partial).size();
        QVERIFY2(have > 0 && have < kModelBytes, qPrintable(QString::number(have)));
        QVERIFY(!QFile::exists(repo_dir() + "/blobs/" + sha));
        QVERIFY(!QDir(repo_dir() + "/snapshots").entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty());
        QVERIFY(!QFileInfo(repo_dir() + "/snapshots/" +
                           QDir(repo_dir() + "/snapshots").entryList(QDir::Dirs | QDir::NoDotAndDotDot)[0] +
                           "/model.safetensors")
                     .exists());
        QVERIFY(!QFile::exists(repo_dir() + "/refs/main"));

        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir}, log_path()));
        const Run r = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(r.code == 0, qPrintable(r.output));
        bool resumed = false;
        for (const QJsonObject& q : hub.requests())
            resumed |=
                q["path"].toString().startsWith("/cdn/") && q["range"].toString() == QString("bytes=%1-").arg(have);
        QVERIFY(resumed);
        QVERIFY(file_bytes(repo_dir() + "/blobs/" + sha) == file_bytes(kModelDir + "/model.safetensors"));
        QVERIFY(incomplete_files().isEmpty());
    }

    void checksum_mismatch_leaves_nothing_complete() {
        const QString sha = sha256_hex(file_bytes(kModelDir + "/model.safetensors"));
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir, "--corrupt", "acme/fortune:model.safetensors"}));
        const Run r = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(r.code != 0 && r.output.contains("failed its check") && r.output.contains(sha), qPrintable(r.output));
        QVERIFY(!QFile::exists(repo_dir() + "/blobs/" + sha));
        QVERIFY(incomplete_files().isEmpty());
        const QStringList snapshots = QDir(repo_dir() + "/snapshots").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
        QCOMPARE(snapshots.size(), 1);
        QVERIFY(!fs::is_symlink((repo_dir() + "/snapshots/" + snapshots[0] + "/model.safetensors").toStdString()));
        QVERIFY(!QFile::exists(repo_dir() + "/refs/main"));
    }

    void gated_repository() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir, "--gated", "acme/fortune", "--token", "hf_right",
                           "--cdn-host", "localhost"},
                          log_path()));
        const Run anonymous = loradeskd({"pull", "acme/fortune"}, env(&hub));
        QVERIFY2(anonymous.code != 0 && anonymous.output.contains("gated") &&
                     anonymous.output.contains("accept its licence") && anonymous.output.contains("set HF_TOKEN"),
                 qPrintable(anonymous.output));
        QVERIFY(QDir(repo_dir() + "/blobs").entryList(QDir::Files).isEmpty());
        const Run wrong = loradeskd({"pull", "acme/fortune"}, env(&hub, "hf_wrong"));
        QVERIFY2(wrong.code != 0 && wrong.output.contains("accept its licence at " + hub.endpoint() + "/acme/fortune"),
                 qPrintable(wrong.output));
        const Run ok = loradeskd({"pull", "acme/fortune"}, env(&hub, "hf_right"));
        QVERIFY2(ok.code == 0, qPrintable(ok.output));
        // The token goes to the Hub, never to the file host it redirects to.
        int to_hub = 0, to_cdn = 0;
        for (const QJsonObject& q : hub.requests()) {
            const bool cdn = q["path"].toString().startsWith("/cdn/");
            const bool with_token = q["authorization"].toString() == "Bearer hf_right";
            (cdn ? to_cdn : to_hub) += with_token;
        }
        QVERIFY(to_hub > 0);
        QCOMPARE(to_cdn, 0);
    }

    void unknown_repository_and_offline() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir}, log_path()));
        const Run unknown = loradeskd({"pull", "acme/nope"}, env(&hub));
        QVERIFY2(unknown.code != 0 && unknown.output.contains("acme/nope was not found on the Hub"),
                 qPrintable(unknown.output));
        const Run malformed = loradeskd({"pull", "../etc"}, env(&hub));
        QVERIFY2(malformed.code != 0 && malformed.output.contains("not a Hugging Face Hub id"),
                 qPrintable(malformed.output));
        const int before = hub.requests().size();
        QProcessEnvironment offline = env(&hub);
        offline.insert("HF_HUB_OFFLINE", "1");
        const Run r = loradeskd({"pull", "acme/fortune"}, offline);
        QVERIFY2(r.code != 0 && r.output.contains("unset HF_HUB_OFFLINE"), qPrintable(r.output));
        QCOMPARE(hub.requests().size(), before);  // not one request
    }

    // The library API a UI drives: progress reaches the totals, on_file reports each file, and the cancel flag
    // stops a pull (no ref written; the next pull finishes it).
    void library_progress_and_cancel() {
        FakeHub hub;
        QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir}));
        loradesk::hub::PullOptions o;
        o.hub.endpoint = hub.endpoint().toStdString();
        o.hub.token.clear();
        o.cache_dir = m_cache.toStdString();
        o.workers = 1;
        std::atomic<bool> cancel{false};
        o.cancel = &cancel;
        int files_seen = 0;
        o.on_file = [&](const loradesk::hub::PullFileState&) {
            ++files_seen;
            cancel = true;
        };
        const auto id = loradesk::hub::require_hub_id("acme/fortune");
        bool cancelled = false;
        try {
            loradesk::hub::pull(id, o);
        } catch (const loradesk::Error& e) {
            cancelled = e.code() == loradesk::ErrorCode::cancelled;
        }
        QVERIFY(cancelled);
        QVERIFY(files_seen >= 1 && files_seen < 6);
        QVERIFY(!QFile::exists(repo_dir() + "/refs/main"));

        cancel = false;
        o.on_file = {};
        o.workers = 4;
        loradesk::hub::PullProgress last;
        o.on_progress = [&](const loradesk::hub::PullProgress& p) { last = p; };
        const auto r = loradesk::hub::pull(id, o);
        QCOMPARE(r.files_downloaded + r.files_cached, 6);
        QVERIFY(r.files_cached >= 1);
        QCOMPARE(last.files_done, 6);
        QCOMPARE(last.bytes_done, last.bytes_total);
        QVERIFY(last.bytes_total > kModelBytes);
        QCOMPARE(ref("main"), QString::fromStdString(r.commit));
    }

    // serve --model org/name and --adapter NAME=org/name read the cache (offline); load_lora_adapter takes ids.
    void serve_resolves_hub_ids_from_the_cache() {
        {
            FakeHub hub;
            QVERIFY(hub.start({"--repo", "acme/fortune=" + kModelDir, "--repo", "acme/fortune-bofh=" + kAdapterDir,
                               "--repo", "acme/fortune-de=" LORADESK_SOURCE_DIR "/resources/demo/adapters/de"}));
            QVERIFY(loradeskd({"pull", "acme/fortune"}, env(&hub)).code == 0);
            const Run adapter = loradeskd({"pull", "acme/fortune-bofh", "--adapter"}, env(&hub));
            QVERIFY2(adapter.code == 0 && adapter.output.contains("--adapter fortune-bofh=acme/fortune-bofh"),
                     qPrintable(adapter.output));
            QVERIFY(loradeskd({"pull", "acme/fortune-de"}, env(&hub)).code == 0);
            const Run listed = loradeskd({"pull", "kit/model", "--list-adapters"}, env(&hub));
            QVERIFY2(listed.code == 0 && listed.output.contains("acme/fortune-bofh") &&
                         listed.output.contains("acme/fortune-de") && !listed.output.contains("acme/fortune ") &&
                         listed.output.contains("1.9 MB"),
                     qPrintable(listed.output));
        }
        QProcessEnvironment offline = env(nullptr);
        offline.insert("HF_HUB_OFFLINE", "1");
        offline.insert("HF_ENDPOINT", "http://127.0.0.1:9");  // nothing listens: any request would fail
        const QString data = m_dir.path() + "/data";
        const Run missing = loradeskd({"serve", "--model", "acme/missing", "--data-dir", data, "--port", "0"}, offline);
        QVERIFY2(missing.code != 0 && missing.output.contains("`loradeskd pull acme/missing` downloads it"),
                 qPrintable(missing.output));

        QProcess serve;
        serve.setProcessChannelMode(QProcess::MergedChannels);
        serve.setProcessEnvironment(offline);
        serve.start(LORADESKD, {"serve", "--model", "acme/fortune", "--adapter", "bofh=acme/fortune-bofh", "--device",
                                "cpu", "--port", "0", "--data-dir", data, "--watch-interval", "0"});
        QByteArray out;
        int port = 0;
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 60000 && serve.state() != QProcess::NotRunning && port == 0) {
            serve.waitForReadyRead(200);
            out += serve.readAll();
            const int at = out.indexOf("loradeskd: listening on http://");
            if (at >= 0) port = out.mid(out.indexOf(':', out.indexOf("//", at) + 2) + 1, 6).toInt();
        }
        QVERIFY2(port > 0, out.constData());
        const std::string models = round_trip(port, request_text("GET", "/v1/models"));
        QVERIFY2(models.find("\"id\":\"acme/fortune\"") != std::string::npos &&
                     models.find("\"id\":\"bofh\"") != std::string::npos,
                 models.c_str());
        const std::string loaded = round_trip(
            port, request_text("POST", "/v1/load_lora_adapter", R"({"lora_name":"de","lora_path":"acme/fortune-de"})"));
        QVERIFY2(status_of(loaded) == 200, loaded.c_str());
        const std::string absent = round_trip(
            port, request_text("POST", "/v1/load_lora_adapter", R"({"lora_name":"x","lora_path":"acme/absent"})"));
        QVERIFY2(status_of(absent) == 400 && absent.find("loradeskd pull acme/absent --adapter") != std::string::npos,
                 absent.c_str());
        // pull --adapter --server registers with a running server (offline here: from the cache, by commit).
        const Run registered = loradeskd({"pull", "acme/fortune-de", "--adapter", "--name", "de2", "--server",
                                          QString("http://127.0.0.1:%1").arg(port)},
                                         offline);
        QVERIFY2(registered.code == 0 && registered.output.contains("loaded into") &&
                     round_trip(port, request_text("GET", "/v1/models")).find("\"id\":\"de2\"") != std::string::npos,
                 qPrintable(registered.output));
        // A model repository is no adapter; a traversal is no id and, with no --adapters, no path either.
        const std::string model = round_trip(
            port, request_text("POST", "/v1/load_lora_adapter", R"({"lora_name":"y","lora_path":"acme/fortune"})"));
        QVERIFY2(status_of(model) == 400 && model.find("no adapter_config.json") != std::string::npos, model.c_str());
        const std::string escape = round_trip(
            port, request_text("POST", "/v1/load_lora_adapter", R"({"lora_name":"z","lora_path":"../../etc"})"));
        QCOMPARE(status_of(escape), 400);
        serve.terminate();
        QVERIFY(serve.waitForFinished(20000));
    }
};

QTEST_GUILESS_MAIN(TstHubPull)
#include "tst_hub_pull.moc"
