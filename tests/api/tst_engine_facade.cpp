// engine/api facade (EngineImpl + StreamImpl) on the CPU runner and a synthesized tiny model: every form of
// the `model` field, the error codes of requests that cannot run, stop strings that span tokens, what a
// cancelled request accounts, and that no failure is ever thrown across the facade.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine_test_util.h"

using namespace loradesk;
namespace fs = std::filesystem;

namespace {

// One request read to its end: the text and token ids of its TokenEvents in order, and how it ended.
struct Transcript {
    std::vector<std::string> texts;  // per TokenEvent
    std::vector<int32_t> ids;
    std::optional<api::FinishEvent> finish;
    std::optional<Status> error;
    std::string text() const {
        std::string all;
        for (auto& t : texts) all += t;
        return all;
    }
};

Transcript read_all(api::RequestStream& stream) {
    Transcript out;
    for (int i = 0; i < 600 && !out.finish && !out.error; ++i) {
        auto ev = stream.next(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (auto* t = std::get_if<api::TokenEvent>(&*ev)) {
            out.texts.push_back(t->text);
            out.ids.insert(out.ids.end(), t->token_ids.begin(), t->token_ids.end());
        } else if (auto* f = std::get_if<api::FinishEvent>(&*ev)) {
            out.finish = *f;
        } else {
            out.error = std::get<api::ErrorEvent>(*ev).status;
        }
    }
    return out;
}

// Runs `call` and fails the test when it throws: the facade reports failures, it never throws them.
template <class F>
bool no_throw(F&& call, std::string& what) {
    try {
        call();
        return true;
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
        what = "a non-std exception";
    }
    return false;
}

}  // namespace

class TstEngineFacade : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string m_model_dir;
    std::unique_ptr<api::Engine> m_engine;
    std::string m_de_digest;

    fs::path tmp() const { return fs::path(m_tmp.path().toStdString()); }

    api::GenerateRequest greedy(const std::string& model, int max_tokens) {
        return test::greedy_request(model, {5, 6, 7, 8, 9}, max_tokens);
    }

  private slots:
    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        m_model_dir = (tmp() / "tiny-base").string();
        const model::ModelConfig config = test::synth_tiny_model(m_model_dir);
        fs::create_directories(tmp() / "adapters");
        test::synth_adapter(config, tmp() / "adapters" / "de", 7);
        m_engine = test::start_engine(test::cpu_options(m_model_dir, {(tmp() / "adapters").string()}));
        QVERIFY(m_engine->set_alias("german", "de").ok());
        m_de_digest = test::listed(*m_engine, "de")->digest;
        QVERIFY(!m_de_digest.empty());
    }

    void cleanupTestCase() {
        if (m_engine) m_engine->shutdown();
        m_engine.reset();
    }

    // ---- model-name forms ----------------------------------------------------------------------

    void model_name_forms_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("adapter");  // SubmitInfo::adapter: the name as asked for, "" for the base
        QTest::newRow("adapter name") << "de"
                                      << "de";
        QTest::newRow("alias") << "german"
                               << "german";
        QTest::newRow("base:adapter") << "base:de"
                                      << "de";
        QTest::newRow("<base id>:adapter") << "tiny-base:de"
                                           << "de";
        QTest::newRow("base id") << "tiny-base"
                                 << "";
        QTest::newRow("base") << "base"
                              << "";
        QTest::newRow("empty") << ""
                               << "";
    }

    void model_name_forms() {
        QFETCH(QString, model);
        QFETCH(QString, adapter);
        QCOMPARE(m_engine->model().id, std::string("tiny-base"));
        auto submitted = m_engine->submit(greedy(model.toStdString(), 3));
        QVERIFY2(submitted.ok(), submitted.status().message.c_str());
        const api::SubmitInfo info = submitted.value()->info();
        QCOMPARE(info.adapter, adapter.toStdString());
        // Every form of the adapter's name runs the same adapter: identity is the digest.
        QCOMPARE(info.adapter_digest, adapter.isEmpty() ? std::string() : m_de_digest);
        if (adapter.isEmpty()) QCOMPARE(info.tier, api::Tier::base);
        Transcript t = read_all(*submitted.value());
        QVERIFY(t.finish);
        QCOMPARE(t.finish->reason, api::FinishReason::length);
        QCOMPARE(t.finish->usage.completion_tokens, 3);
        QCOMPARE(int(t.ids.size()), 3);
    }

    // The adapter changes the output: the same prompt under "de" and under the base differs somewhere in
    // 12 greedy tokens, and each form of the adapter's name gives the adapter's tokens.
    void adapter_forms_give_the_adapters_tokens() {
        auto run = [&](const std::string& model) {
            auto s = m_engine->submit(greedy(model, 12));
            if (!s.ok()) return std::vector<int32_t>{};
            return read_all(*s.value()).ids;
        };
        const std::vector<int32_t> de = run("de");
        QCOMPARE(int(de.size()), 12);
        QVERIFY(run("") != de);
        QCOMPARE(run("german"), de);
        QCOMPARE(run("base:de"), de);
    }

    // ---- requests that cannot run: error codes, at submission ----------------------------------

    void unknown_or_bad_requests_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("code");
        QTest::newRow("unknown adapter") << 0 << int(ErrorCode::not_found);
        QTest::newRow("other base model prefix") << 1 << int(ErrorCode::not_found);
        QTest::newRow("unknown adapter after base:") << 2 << int(ErrorCode::not_found);
        QTest::newRow("no prompt") << 3 << int(ErrorCode::invalid_argument);
        QTest::newRow("two prompt forms") << 4 << int(ErrorCode::invalid_argument);
        QTest::newRow("empty prompt text") << 5 << int(ErrorCode::invalid_argument);
        QTest::newRow("token id out of the vocabulary") << 6 << int(ErrorCode::invalid_argument);
        QTest::newRow("prompt_logprobs out of range") << 7 << int(ErrorCode::invalid_argument);
        QTest::newRow("strict max_tokens beyond the context") << 8 << int(ErrorCode::context_too_long);
    }

    void unknown_or_bad_requests() {
        QFETCH(int, which);
        QFETCH(int, code);
        api::GenerateRequest r = greedy("", 4);
        switch (which) {
            case 0:
                r.model = "no-such-adapter";
                break;
            case 1:
                r.model = "other-model:de";
                break;
            case 2:
                r.model = "base:no-such-adapter";
                break;
            case 3:
                r.prompt_ids.clear();
                break;
            case 4:
                r.prompt = "hello";
                break;
            case 5:
                r.prompt_ids.clear(), r.prompt = "";
                break;
            case 6:
                r.prompt_ids = {1, 2, 1 << 30};
                break;
            case 7:
                r.prompt_logprobs = 21;
                break;
            case 8:
                r.stop.strict_max_tokens = true, r.stop.max_tokens = m_engine->model().max_context;
                break;
        }
        std::optional<Status> failed;
        std::string thrown;
        const bool clean = no_throw(
            [&] {
                auto s = m_engine->submit(r);
                if (!s.ok()) {
                    failed = s.status();
                    return;
                }
                Transcript t = read_all(*s.value());  // a failure may also arrive as an ErrorEvent
                if (t.error) failed = *t.error;
            },
            thrown);
        QVERIFY2(clean, thrown.c_str());
        QVERIFY(failed);
        QVERIFY2(int(failed->code) == code, failed->message.c_str());
        QVERIFY(!failed->message.empty());
    }

    // ---- stop strings ----------------------------------------------------------------------------

    // A stop string made of the end of one token's text and the start of the next: the text ends right
    // before it, the finish says stop with that string, and the tokens after it are not reported.
    void stop_string_spanning_tokens() {
        const int n = 24;
        auto first = m_engine->submit(greedy("de", n));
        QVERIFY(first.ok());
        const Transcript full = read_all(*first.value());
        QVERIFY(full.finish);
        const std::string text = full.text();

        // A boundary between two non-empty event texts whose two ASCII letters around it occur first there.
        std::size_t at = std::string::npos, pos = 0;
        for (std::size_t i = 0; i + 1 < full.texts.size() && at == std::string::npos; ++i) {
            pos += full.texts[i].size();
            if (full.texts[i].empty() || full.texts[i + 1].empty()) continue;
            const unsigned char a = text[pos - 1], b = text[pos];
            if (a < 0x21 || a > 0x7e || b < 0x21 || b > 0x7e) continue;
            if (text.find(text.substr(pos - 1, 2)) == pos - 1) at = pos - 1;
        }
        if (at == std::string::npos) QSKIP("no two printable ASCII token texts meet in this greedy output");
        const std::string stop = text.substr(at, 2);

        api::GenerateRequest r = greedy("de", n);
        r.stop.stop = {stop};
        auto second = m_engine->submit(r);
        QVERIFY(second.ok());
        const Transcript cut = read_all(*second.value());
        QVERIFY(cut.finish);
        QCOMPARE(cut.finish->reason, api::FinishReason::stop);
        QCOMPARE(cut.finish->stop_reason, stop);
        QCOMPARE(cut.text(), text.substr(0, at));
        QVERIFY(cut.text().find(stop) == std::string::npos);

        r.stop.include_stop_str_in_output = true;
        auto third = m_engine->submit(r);
        QVERIFY(third.ok());
        QCOMPARE(read_all(*third.value()).text(), text.substr(0, at + 2));
    }

    // ---- cancel accounting -------------------------------------------------------------------------

    void cancel_accounts_what_was_generated() {
        const api::AdapterInfo before = *test::listed(*m_engine, "de");
        const api::EngineStats stats_before = m_engine->stats();

        auto submitted = m_engine->submit(greedy("german", 2000));
        QVERIFY(submitted.ok());
        auto stream = submitted.value();
        Transcript t;
        for (int i = 0; i < 600 && t.ids.size() < 3; ++i) {  // a few tokens, then the client goes away
            auto ev = stream->next(std::chrono::milliseconds(100));
            if (auto* tok = ev ? std::get_if<api::TokenEvent>(&*ev) : nullptr)
                t.ids.insert(t.ids.end(), tok->token_ids.begin(), tok->token_ids.end());
        }
        QVERIFY(t.ids.size() >= 3);
        stream->cancel();
        Transcript rest = read_all(*stream);
        QVERIFY(rest.finish);
        QVERIFY(!rest.error);
        QCOMPARE(rest.finish->reason, api::FinishReason::cancelled);
        const int delivered = int(t.ids.size() + rest.ids.size());
        QCOMPARE(rest.finish->usage.completion_tokens, delivered);
        QVERIFY(delivered < 2000);
        QCOMPARE(rest.finish->usage.prompt_tokens, 5);
        QVERIFY(!stream->next(std::chrono::milliseconds(10)));  // nothing after the finish

        const api::AdapterInfo after = *test::listed(*m_engine, "de");
        QCOMPARE(after.requests_total, before.requests_total + 1);
        QCOMPARE(after.generated_tokens_total, before.generated_tokens_total + uint64_t(delivered));
        QCOMPARE(after.prompt_tokens_total, before.prompt_tokens_total + 5);
        QCOMPARE(after.running, 0);
        QTRY_COMPARE(m_engine->stats().running, 0);
        QVERIFY(m_engine->stats().generated_tokens_total >= stats_before.generated_tokens_total + uint64_t(delivered));
    }

    // A consumer that drops its stream without reading the finish (a client that disconnected) ends the
    // request and it is accounted once, as cancelled.
    void dropped_stream_is_accounted_once() {
        const api::AdapterInfo before = *test::listed(*m_engine, "de");
        {
            auto submitted = m_engine->submit(greedy("de", 2000));
            QVERIFY(submitted.ok());
            auto ev = submitted.value()->next(std::chrono::seconds(30));
            QVERIFY(ev);
        }
        QTRY_COMPARE(test::listed(*m_engine, "de")->running, 0);
        QTRY_COMPARE(m_engine->stats().running, 0);
        const api::AdapterInfo after = *test::listed(*m_engine, "de");
        QCOMPARE(after.requests_total, before.requests_total + 1);
        QVERIFY(after.generated_tokens_total > before.generated_tokens_total);
        QVERIFY(after.generated_tokens_total < before.generated_tokens_total + 2000);
    }

    // ---- nothing is thrown across ------------------------------------------------------------------

    void failures_are_returned_not_thrown_data() {
        QTest::addColumn<int>("which");
        const char* rows[] = {"load missing folder",
                              "load bad name",
                              "unload unknown",
                              "pin unknown",
                              "alias unknown",
                              "alias bad name",
                              "adapter unknown",
                              "details unknown",
                              "history without a catalog",
                              "import missing folder",
                              "remove unknown",
                              "detokenize bad id",
                              "render_chat bad messages",
                              "chat messages not an array"};
        for (int i = 0; i < int(std::size(rows)); ++i) QTest::newRow(rows[i]) << i;
    }

    void failures_are_returned_not_thrown() {
        QFETCH(int, which);
        const std::string missing = (tmp() / "no-such-folder").string();
        std::string thrown;
        bool failed = false;
        const bool clean = no_throw(
            [&] {
                switch (which) {
                    case 0:
                        failed = !m_engine->load_adapter("fresh", missing).ok();
                        break;
                    case 1:
                        failed = !m_engine->load_adapter("bad name/..", missing).ok();
                        break;
                    case 2:
                        failed = !m_engine->unload_adapter("no-such-adapter").ok();
                        break;
                    case 3:
                        failed = !m_engine->pin_adapter("no-such-adapter", true).ok();
                        break;
                    case 4:
                        failed = !m_engine->set_alias("alias2", "no-such-adapter").ok();
                        break;
                    case 5:
                        failed = !m_engine->set_alias("bad alias\n", "de").ok();
                        break;
                    case 6:
                        failed = !m_engine->adapter("no-such-adapter").ok();
                        break;
                    case 7:
                        failed = !m_engine->adapter_details("no-such-adapter").ok();
                        break;
                    case 8: {  // without a data dir there is no history: an empty answer, not a failure
                        auto h = m_engine->adapter_history("no-such-adapter", 5);
                        failed = !h.ok() || h.value().empty();
                        break;
                    }
                    case 9:
                        failed = !m_engine->import_adapters(missing).ok();
                        break;
                    case 10:
                        failed = !m_engine->remove_adapter("no-such-adapter").ok();
                        break;
                    case 11:
                        failed = !m_engine->detokenize({1 << 30}, false).ok();
                        break;
                    case 12:
                        failed =
                            !m_engine->render_chat(nlohmann::ordered_json("not a list"), nullptr, true, nullptr).ok();
                        break;
                    case 13: {
                        api::GenerateRequest r;
                        r.messages = nlohmann::ordered_json::object();
                        auto s = m_engine->submit(r);
                        failed = !s.ok() || read_all(*s.value()).error.has_value();
                        break;
                    }
                }
            },
            thrown);
        QVERIFY2(clean, thrown.c_str());
        QVERIFY(failed);
        // The engine still serves after every failure.
        QCOMPARE(test::run_request(*m_engine, "de").value(), m_de_digest);
    }
};

QTEST_GUILESS_MAIN(TstEngineFacade)
#include "tst_engine_facade.moc"
