// engine/hub without a network: Hub id rules (traversal and malformed ids refused), the cache directory from
// HF_HUB_CACHE / HF_HOME / HOME, resolution from a cache written in transformers' layout (refs, snapshots
// linking to blobs) by branch and by commit, the messages for what is missing, refusal of snapshots whose
// links leave the cache, and hub/download's pure parts: include globs, git blob ids, the model-info JSON.
#include <QTemporaryDir>
#include <QtTest>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "hub/download/hub_api.h"
#include "hub/download/pull.h"
#include "hub/hf_cache.h"
#include "hub/hub_id.h"

using namespace loradesk;
namespace fs = std::filesystem;

namespace {

const std::string kCommitMain = "1111111111111111111111111111111111111111";
const std::string kCommitV2 = "2222222222222222222222222222222222222222";

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

// What huggingface_hub leaves after downloading a model: blobs by hash, snapshot links, refs/main (no newline).
fs::path make_cached_repo(const fs::path& cache, const std::string& folder) {
    const fs::path repo = cache / folder;
    write(repo / "blobs" / "aaaa", R"({"model_type": "qwen3"})");
    write(repo / "blobs" / "bbbb", "weights");
    write(repo / "blobs" / "cccc", R"({"peft_type": "LORA"})");
    write(repo / "refs" / "main", kCommitMain);
    write(repo / "refs" / "v2", kCommitV2 + "\n");
    for (const std::string& commit : {kCommitMain, kCommitV2}) {
        fs::create_directories(repo / "snapshots" / commit / "sub");
        fs::create_symlink("../../blobs/aaaa", repo / "snapshots" / commit / "config.json");
        fs::create_symlink("../../../blobs/bbbb", repo / "snapshots" / commit / "sub" / "model.safetensors");
    }
    fs::create_symlink("../../blobs/cccc", repo / "snapshots" / kCommitV2 / "adapter_config.json");
    return repo;
}

QString message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class TstHubCache : public QObject {
    Q_OBJECT

  private slots:
    void ids_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("valid");
        QTest::addColumn<QString>("repo");
        QTest::addColumn<QString>("revision");
        QTest::newRow("plain") << "Qwen/Qwen3-8B" << true << "Qwen/Qwen3-8B"
                               << "";
        QTest::newRow("branch") << "org/name@v2" << true << "org/name"
                                << "v2";
        QTest::newRow("pr ref") << "org/name@refs/pr/1" << true << "org/name"
                                << "refs/pr/1";
        QTest::newRow("commit") << ("org/n.a_m-e@" + QString::fromStdString(kCommitMain)) << true << "org/n.a_m-e"
                                << QString::fromStdString(kCommitMain);
        QTest::newRow("no org") << "gpt2" << false << ""
                                << "";
        QTest::newRow("traversal") << "../x" << false << ""
                                   << "";
        QTest::newRow("dotdot name") << "org/.." << false << ""
                                     << "";
        QTest::newRow("dotdot inside") << "org/a..b" << false << ""
                                       << "";
        QTest::newRow("absolute") << "/models/x" << false << ""
                                  << "";
        QTest::newRow("three parts") << "a/b/c" << false << ""
                                     << "";
        QTest::newRow("double dash") << "org/a--b" << false << ""
                                     << "";
        QTest::newRow("leading dash") << "-org/name" << false << ""
                                      << "";
        QTest::newRow("space") << "org/na me" << false << ""
                               << "";
        QTest::newRow("revision traversal") << "org/name@../../etc" << false << ""
                                            << "";
        QTest::newRow("empty revision") << "org/name@" << false << ""
                                        << "";
        QTest::newRow("revision slash end") << "org/name@main/" << false << ""
                                            << "";
    }
    void ids() {
        QFETCH(QString, text);
        QFETCH(bool, valid);
        const auto id = hub::parse_hub_id(text.toStdString());
        QCOMPARE(id.has_value(), valid);
        if (!valid) {
            QVERIFY(message_of([&] { hub::require_hub_id(text.toStdString()); }).contains("not a Hugging Face Hub id"));
            return;
        }
        QFETCH(QString, repo);
        QFETCH(QString, revision);
        QCOMPARE(QString::fromStdString(id->repo), repo);
        QCOMPARE(QString::fromStdString(id->revision), revision);
    }
    void repo_files_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("safe");
        QTest::newRow("file") << "config.json" << true;
        QTest::newRow("nested") << "onnx/model.onnx" << true;
        QTest::newRow("empty") << "" << false;
        QTest::newRow("absolute") << "/etc/passwd" << false;
        QTest::newRow("parent") << "a/../../b" << false;
        QTest::newRow("dot") << "./a" << false;
        QTest::newRow("double slash") << "a//b" << false;
        QTest::newRow("backslash") << "a\\..\\b" << false;
        QTest::newRow("newline") << "a\nb" << false;
    }
    void repo_files() {
        QFETCH(QString, path);
        QFETCH(bool, safe);
        QCOMPARE(!hub::repo_file_problem(path.toStdString()).has_value(), safe);
    }
    void names() {
        QCOMPARE(hub::repo_folder_name("Qwen/Qwen3-8B"), std::string("models--Qwen--Qwen3-8B"));
        QCOMPARE(hub::url_quote("refs/pr/1"), std::string("refs%2Fpr%2F1"));
        QCOMPARE(hub::url_quote("a b/c.json", "/"), std::string("a%20b/c.json"));
        QVERIFY(hub::is_commit_hash(kCommitMain));
        QVERIFY(!hub::is_commit_hash("main"));
        QVERIFY(!hub::is_blob_hash("ABCDEF0123456789ABCDEF0123456789ABCDEF01"));  // uppercase is not a blob name
    }
    void cache_dir_from_environment() {
        const QByteArray saved[4] = {qgetenv("HF_HUB_CACHE"), qgetenv("HF_HOME"), qgetenv("XDG_CACHE_HOME"),
                                     qgetenv("HUGGINGFACE_HUB_CACHE")};
        qunsetenv("HUGGINGFACE_HUB_CACHE");
        qunsetenv("XDG_CACHE_HOME");
        qputenv("HF_HUB_CACHE", "/x/hub");
        qputenv("HF_HOME", "/y");
        QCOMPARE(hub::hub_cache_dir(), std::string("/x/hub"));
        qunsetenv("HF_HUB_CACHE");
        QCOMPARE(hub::hub_cache_dir(), std::string("/y/hub"));
        qunsetenv("HF_HOME");
        QCOMPARE(hub::hub_cache_dir(), qEnvironmentVariable("HOME").toStdString() + "/.cache/huggingface/hub");
        qputenv("XDG_CACHE_HOME", "/z");
        QCOMPARE(hub::hub_cache_dir(), std::string("/z/huggingface/hub"));
        const char* names[4] = {"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HUGGINGFACE_HUB_CACHE"};
        for (int i = 0; i < 4; ++i) saved[i].isNull() ? qunsetenv(names[i]) : qputenv(names[i], saved[i]);
    }
    // Offline resolution from a cache as transformers writes it: by branch, by commit, refs with a newline.
    void resolves_from_transformers_layout() {
        QTemporaryDir dir;
        const fs::path cache = dir.path().toStdString();
        const fs::path repo = make_cached_repo(cache, "models--acme--tiny");
        const auto main =
            hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny"), hub::RepoContent::model);
        QCOMPARE(main.commit, kCommitMain);
        QCOMPARE(fs::path(main.path), fs::canonical(repo / "snapshots" / kCommitMain));
        QCOMPARE(hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny@v2"), hub::RepoContent::adapter)
                     .commit,
                 kCommitV2);
        const auto by_commit = hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny@" + kCommitV2),
                                                     hub::RepoContent::model);
        QCOMPARE(by_commit.commit, kCommitV2);
        std::ifstream config(fs::path(main.path) / "config.json");
        std::string text((std::istreambuf_iterator<char>(config)), {});
        QCOMPARE(text, std::string(R"({"model_type": "qwen3"})"));
        // resolve_reference: ids resolve, folders and non-ids pass through unchanged.
        QCOMPARE(hub::resolve_reference("acme/tiny", hub::RepoContent::model, cache.string()), main.path);
        QCOMPARE(hub::resolve_reference(dir.path().toStdString(), hub::RepoContent::model, cache.string()),
                 dir.path().toStdString());
        QCOMPARE(hub::resolve_reference("no-such-folder", hub::RepoContent::model, cache.string()),
                 std::string("no-such-folder"));
    }
    void missing_says_pull() {
        QTemporaryDir dir;
        const std::string cache = dir.path().toStdString();
        make_cached_repo(cache, "models--acme--tiny");
        const QString absent =
            message_of([&] { hub::resolve_reference("acme/other", hub::RepoContent::model, cache); });
        QVERIFY2(absent.contains("not in the Hugging Face cache") && absent.contains("`loradeskd pull acme/other`"),
                 qPrintable(absent));
        const QString branch =
            message_of([&] { hub::resolve_reference("acme/tiny@dev", hub::RepoContent::adapter, cache); });
        QVERIFY2(branch.contains("loradeskd pull acme/tiny --revision dev --adapter"), qPrintable(branch));
        // main has no adapter_config.json: not an adapter.
        const QString kind = message_of([&] { hub::resolve_reference("acme/tiny", hub::RepoContent::adapter, cache); });
        QVERIFY2(kind.contains("no adapter_config.json"), qPrintable(kind));
    }
    void refuses_links_out_of_the_cache() {
        QTemporaryDir dir, outside;
        const fs::path cache = dir.path().toStdString();
        const fs::path repo = make_cached_repo(cache, "models--acme--tiny");
        write(fs::path(outside.path().toStdString()) / "secret", "secret");
        fs::create_symlink(fs::path(outside.path().toStdString()) / "secret",
                           repo / "snapshots" / kCommitMain / "tokenizer.json");
        const QString escape = message_of(
            [&] { hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny"), hub::RepoContent::model); });
        QVERIFY2(escape.contains("points outside the Hugging Face cache"), qPrintable(escape));
        // A ref that is not a commit hash is not followed as a path.
        write(repo / "refs" / "evil", "../../../../etc");
        const QString ref = message_of([&] {
            hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny@evil"), hub::RepoContent::model);
        });
        QVERIFY2(ref.contains("does not hold a commit hash"), qPrintable(ref));
        // A HubId built by hand (a UI) is checked as a parsed one is.
        hub::HubId by_hand;
        by_hand.repo = "acme/tiny";
        by_hand.revision = "../../../etc";
        QVERIFY(message_of([&] { hub::find_snapshot(cache.string(), by_hand); }).contains("not a Hugging Face Hub id"));
        by_hand = {"../x", ""};
        QVERIFY(message_of([&] { hub::pull(by_hand, {}); }).contains("not a Hugging Face Hub id"));
    }
    void dangling_link_says_pull_again() {
        QTemporaryDir dir;
        const fs::path cache = dir.path().toStdString();
        const fs::path repo = make_cached_repo(cache, "models--acme--tiny");
        fs::remove(repo / "blobs" / "bbbb");
        const QString m = message_of(
            [&] { hub::resolve_snapshot(cache.string(), hub::require_hub_id("acme/tiny"), hub::RepoContent::model); });
        QVERIFY2(m.contains("interrupted download") && m.contains("loradeskd pull acme/tiny"), qPrintable(m));
    }
    void include_globs() {
        QVERIFY(hub::path_included("config.json", {}));
        QVERIFY(hub::path_included("config.json", {"*.json"}));
        QVERIFY(hub::path_included("onnx/model.json", {"*.json"}));  // '*' crosses '/', as Python's fnmatch
        QVERIFY(!hub::path_included("model.safetensors", {"*.json"}));
        QVERIFY(hub::path_included("onnx/model.onnx", {"onnx/"}));
        QVERIFY(hub::path_included("model.safetensors", {"*.json", "*.safetensors"}));
    }
    void git_blob_ids() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/hello";
        write(path, "hello\n");
        QCOMPARE(hub::git_blob_sha1_of_file(path), std::string("ce013625030ba8dba906f756967f9e9ca394464a"));
        write(path, "");
        QCOMPARE(hub::git_blob_sha1_of_file(path), std::string("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"));
        QCOMPARE(hub::sha256_of_file(path),
                 std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    }
    void model_info_json() {
        const std::string sha256(64, 'a');
        const auto info = hub::parse_model_info(R"({"id":"acme/tiny","sha":")" + kCommitMain +
                                                R"(","gated":"auto","siblings":[{"rfilename":"config.json","size":9,
            "blobId":"ce013625030ba8dba906f756967f9e9ca394464a"},{"rfilename":"model.safetensors","size":5,
            "lfs":{"sha256":")" + sha256 + R"(","size":123,"pointerSize":134}}]})");
        QCOMPARE(info.commit, kCommitMain);
        QVERIFY(info.gated);
        QCOMPARE(info.files.size(), std::size_t(2));
        QCOMPARE(info.files[1].sha256, sha256);
        QCOMPARE(info.files[1].size, int64_t(123));
        const QString evil = message_of(
            [&] { hub::parse_model_info(R"({"sha":")" + kCommitMain + R"(","siblings":[{"rfilename":"../../x"}]})"); });
        QVERIFY2(evil.contains("cannot be stored safely"), qPrintable(evil));
        QVERIFY(!message_of([] { hub::parse_model_info(R"({"sha":"main","siblings":[]})"); }).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TstHubCache)
#include "tst_hub_cache.moc"
