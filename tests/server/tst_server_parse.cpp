// engine/server request parsing: every parameter's accepted forms land in api::GenerateRequest; wrong types
// and out-of-range values are 400s naming the parameter; lora_path cannot escape the adapter roots.
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/request_parse.h"

using namespace loradesk;
using namespace loradesk::server;
using nlohmann::json;

class TstServerParse : public QObject {
    Q_OBJECT
  private slots:
    void rejects_bad_values_data() {
        QTest::addColumn<bool>("chat");
        QTest::addColumn<QString>("body");
        QTest::addColumn<QString>("param");
        const QString m = R"("messages":[{"role":"user","content":"hi"}])";
        auto chat = [&](const char* name, const QString& extra, const char* param) {
            QTest::newRow(name) << true << "{" + m + (extra.isEmpty() ? "" : "," + extra) + "}" << param;
        };
        QTest::newRow("messages missing") << true << R"({"model":"x"})"
                                          << "messages";
        QTest::newRow("messages empty") << true << R"({"messages":[]})"
                                        << "messages";
        QTest::newRow("bad role") << true << R"({"messages":[{"role":"robot","content":"x"}]})"
                                  << "messages";
        QTest::newRow("image part")
            << true << R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})"
            << "messages";
        QTest::newRow("content number") << true << R"({"messages":[{"role":"user","content":5}]})"
                                        << "messages";
        chat("model number", R"("model":5)", "model");
        chat("temperature high", R"("temperature":2.5)", "temperature");
        chat("temperature string", R"("temperature":"hot")", "temperature");
        chat("top_p zero", R"("top_p":0)", "top_p");
        chat("top_p high", R"("top_p":1.5)", "top_p");
        chat("top_k float", R"("top_k":2.5)", "top_k");
        chat("top_k below -1", R"("top_k":-2)", "top_k");
        chat("min_p", R"("min_p":-0.1)", "min_p");
        chat("presence", R"("presence_penalty":3)", "presence_penalty");
        chat("frequency", R"("frequency_penalty":-2.1)", "frequency_penalty");
        chat("repetition zero", R"("repetition_penalty":0)", "repetition_penalty");
        chat("n zero", R"("n":0)", "n");
        chat("n too many", R"("n":1000)", "n");
        chat("max_tokens zero", R"("max_tokens":0)", "max_tokens");
        chat("max_tokens string", R"("max_tokens":"10")", "max_tokens");
        chat("max_completion_tokens", R"("max_completion_tokens":-1)", "max_completion_tokens");
        chat("min_tokens > max", R"("max_tokens":2,"min_tokens":5)", "min_tokens");
        chat("stop number", R"("stop":5)", "stop");
        chat("stop list number", R"("stop":["a",1])", "stop");
        chat("stop empty", R"("stop":[""])", "stop");
        chat("stop_token_ids", R"("stop_token_ids":["a"])", "stop_token_ids");
        chat("seed float", R"("seed":1.5)", "seed");
        chat("logit_bias key", R"("logit_bias":{"abc":1})", "logit_bias");
        chat("logit_bias range", R"("logit_bias":{"5":101})", "logit_bias");
        chat("logprobs int", R"("logprobs":3)", "logprobs");
        chat("top_logprobs without logprobs", R"("top_logprobs":2)", "top_logprobs");
        chat("top_logprobs high", R"("logprobs":true,"top_logprobs":21)", "top_logprobs");
        chat("stream string", R"("stream":"yes")", "stream");
        chat("stream_options", R"("stream":true,"stream_options":[])", "stream_options");
        chat("include_usage", R"("stream":true,"stream_options":{"include_usage":1})", "include_usage");
        chat("tools object", R"("tools":{})", "tools");
        chat("tool without name", R"("tools":[{"type":"function","function":{}}])", "tools");
        chat("tool_choice", R"("tool_choice":"sometimes")", "tool_choice");
        chat("template kwargs", R"("chat_template_kwargs":[1])", "chat_template_kwargs");
        chat("response_format type", R"("response_format":{"type":"structural_tag"})", "response_format");
        chat(
            "json_schema keyword",
            R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","patternProperties":{}}}})",
            "response_format.json_schema.schema");
        chat("json_schema not object", R"("response_format":{"type":"json_schema"})", "response_format");
        chat("guided_choice empty", R"("guided_choice":[])", "guided_choice");
        chat("guided_regex lookahead", R"("guided_regex":"(?=a)b")", "guided_regex");
        chat("guided_json text", R"("guided_json":"not json")", "guided_json");
        chat("two constraints", R"("guided_choice":["a"],"guided_regex":"b")", "guided_choice");
        chat("structured_outputs two", R"("structured_outputs":{"choice":["a"],"regex":"b"})", "structured_outputs");
        chat("whitespace pattern", R"("guided_whitespace_pattern":" ")", "guided_whitespace_pattern");
        chat("user", R"("user":7)", "user");
        chat("ignore_eos", R"("ignore_eos":"no")", "ignore_eos");
        chat("echo", R"("echo":1)", "echo");
        chat("lora_path outside", R"("lora_path":"/etc")", "lora_path");
        QTest::newRow("prompt missing") << false << R"({"model":"x"})"
                                        << "prompt";
        QTest::newRow("prompt object") << false << R"({"prompt":{}})"
                                       << "prompt";
        QTest::newRow("prompt empty list") << false << R"({"prompt":[]})"
                                           << "prompt";
        QTest::newRow("prompt mixed") << false << R"({"prompt":["a",{}]})"
                                      << "prompt";
        QTest::newRow("prompt negative id") << false << R"({"prompt":[1,-2]})"
                                            << "prompt";
        QTest::newRow("prompt empty ids") << false << R"({"prompt":[[]]})"
                                          << "prompt";
        QTest::newRow("completion logprobs 6") << false << R"({"prompt":"a","logprobs":6})"
                                               << "logprobs";
        QTest::newRow("completion logprobs bool") << false << R"({"prompt":"a","logprobs":true})"
                                                  << "logprobs";
        QTest::newRow("suffix") << false << R"({"prompt":"a","suffix":"b"})"
                                << "suffix";
        QTest::newRow("prompts x n") << false << R"({"prompt":["a","b","c"],"n":30})"
                                     << "prompt";
        // Integers out of range never wrap (2^64-1 used to read as -1) and never truncate (1e20).
        const QString u64 = "18446744073709551615", i63 = "9223372036854775808";
        chat("top_k 2^64-1", R"("top_k":)" + u64, "top_k");
        chat("n 2^64-1", R"("n":)" + u64, "n");
        chat("max_tokens 1e20", R"("max_tokens":1e20)", "max_tokens");
        chat("max_completion_tokens 2^63", R"("max_completion_tokens":)" + i63, "max_completion_tokens");
        chat("min_tokens 2^63", R"("min_tokens":)" + i63, "min_tokens");
        chat("seed 2^64-1", R"("seed":)" + u64, "seed");
        chat("seed 1e20", R"("seed":1e20)", "seed");
        chat("top_logprobs 2^63", R"("logprobs":true,"top_logprobs":)" + i63, "top_logprobs");
        chat("stop_token_ids 2^64-1", R"("stop_token_ids":[)" + u64 + "]", "stop_token_ids");
        QTest::newRow("prompt id 2^64-1") << false << R"({"prompt":[1,)" + u64 + "]}"
                                          << "prompt";
        QTest::newRow("completion logprobs 2^64-1") << false << R"({"prompt":"a","logprobs":)" + u64 + "}"
                                                    << "logprobs";
        // Lists every choice copies are capped.
        QString bias, stops, ids;
        for (int i = 0; i < 301; ++i) bias += QString(i ? "," : "") + QString("\"%1\":1").arg(i);
        for (int i = 0; i < 257; ++i) stops += QString(i ? "," : "") + "\"s\"";
        for (int i = 0; i < 1025; ++i) ids += QString(i ? "," : "") + "2";
        chat("logit_bias 301 entries", R"("logit_bias":{)" + bias + "}", "logit_bias");
        chat("logit_bias signed key", R"("logit_bias":{"+5":1})", "logit_bias");
        chat("stop 257 strings", R"("stop":[)" + stops + "]", "stop");
        chat("stop over 64 KiB", "\"stop\":\"" + QString(70000, 'x') + "\"", "stop");
        chat("stop_token_ids 1025", R"("stop_token_ids":[)" + ids + "]", "stop_token_ids");
        QString many;
        for (int i = 0; i < 1000; ++i) many += QString(i ? "," : "") + "\"p\"";
        QTest::newRow("1000 prompts") << false << "{\"prompt\":[" + many + "]}"
                                      << "prompt";
    }
    void rejects_bad_values() {
        QFETCH(bool, chat);
        QFETCH(QString, body);
        QFETCH(QString, param);
        ServerOptions options;
        const json parsed = json::parse(body.toStdString());
        try {
            chat ? parse_chat_request(parsed, options) : parse_completion_request(parsed, options);
            QFAIL("accepted an invalid request");
        } catch (const ApiError& e) {
            QCOMPARE(e.status, 400);
            QCOMPARE(QString::fromStdString(e.param), param);
            QVERIFY2(std::string(e.what()).size() > 10, e.what());
        }
    }

    void chat_fields_reach_the_request() {
        const json body = json::parse(R"({
            "model":"sql-lora","messages":[{"role":"developer","content":"be brief"},
              {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
              {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
              {"role":"tool","content":"42","tool_call_id":"c"}],
            "max_tokens":10,"max_completion_tokens":20,"temperature":0,"top_p":0.9,"top_k":-1,"min_p":0.05,
            "presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,"seed":-3,
            "logit_bias":{"7":-100,"9":2.5},"logprobs":true,"top_logprobs":3,"stop":"END","stop_token_ids":[2,3],
            "stream":true,"stream_options":{"include_usage":true},"n":2,"user":"u","ignore_eos":true,"min_tokens":4,
            "skip_special_tokens":false,"include_stop_str_in_output":true,"add_generation_prompt":false,
            "chat_template_kwargs":{"enable_thinking":false},"tool_choice":"auto",
            "tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"unknown_field":{"x":1},
            "response_format":{"type":"text"}})");
        const ParsedGeneration p = parse_chat_request(body, ServerOptions{});
        QCOMPARE(p.prompts.size(), std::size_t(1));
        const api::GenerateRequest& r = p.prompts[0];
        QCOMPARE(r.model, std::string("sql-lora"));
        QCOMPARE((*r.messages)[0]["role"].get<std::string>(), std::string("system"));
        QCOMPARE((*r.messages)[1]["content"].get<std::string>(), std::string("a\nb"));  // parts join with "\n"
        QCOMPARE((*r.messages)[2]["content"].get<std::string>(), std::string());        // null + tool_calls -> ""
        QCOMPARE(r.stop.max_tokens, 20);                                                // max_completion_tokens wins
        QVERIFY(r.stop.strict_max_tokens);  // asked for: beyond the context it is an error, not clipped
        QCOMPARE(r.sampling.temperature, 0.0f);
        QCOMPARE(r.sampling.top_p, 0.9f);
        QCOMPARE(r.sampling.top_k, 0);
        QCOMPARE(r.sampling.min_p, 0.05f);
        QCOMPARE(r.sampling.presence_penalty, 0.5f);
        QCOMPARE(r.sampling.frequency_penalty, -0.5f);
        QCOMPARE(r.sampling.repetition_penalty, 1.1f);
        QCOMPARE(r.sampling.seed.value(), uint64_t(int64_t(-3)));
        QCOMPARE(r.sampling.logit_bias.at(7), -100.0f);
        QCOMPARE(r.sampling.logit_bias.at(9), 2.5f);
        QCOMPARE(r.logprobs, 3);
        QCOMPARE(r.stop.stop, std::vector<std::string>{"END"});
        QCOMPARE(r.stop.stop_token_ids, (std::vector<int32_t>{2, 3}));
        QVERIFY(r.stop.ignore_eos);
        QVERIFY(r.stop.include_stop_str_in_output);
        QCOMPARE(r.stop.min_tokens, 4);
        QVERIFY(!r.skip_special_tokens);
        QVERIFY(!r.add_generation_prompt);
        QCOMPARE(r.chat_template_kwargs["enable_thinking"].get<bool>(), false);
        QCOMPARE(r.tools.size(), std::size_t(1));
        QVERIFY(p.stream && p.include_usage && p.parse_tool_calls);
        QCOMPARE(p.n, 2);
        QCOMPARE(p.user, std::string("u"));
    }

    void defaults_and_nulls() {
        ServerOptions options;
        options.default_max_tokens = 77;
        const json body = json::parse(R"({"messages":[{"role":"user","content":"x"}],"temperature":null,"stop":null,
                                          "stream_options":{"include_usage":true},"tool_choice":"none",
                                          "tools":[{"type":"function","function":{"name":"f"}}]})");
        const ParsedGeneration p = parse_chat_request(body, options);
        const api::GenerateRequest& r = p.prompts[0];
        QCOMPARE(r.stop.max_tokens, 77);
        QVERIFY(!r.stop.strict_max_tokens);  // the default is clipped to the context
        QCOMPARE(r.sampling.temperature, 1.0f);
        QVERIFY(r.stop.stop.empty());
        QCOMPARE(r.logprobs, -1);
        QVERIFY(!p.include_usage);   // only meaningful with stream:true
        QVERIFY(r.tools.is_null());  // tool_choice none: the model is not told about tools
        QVERIFY(!p.parse_tool_calls);
        QVERIFY(r.add_generation_prompt);
        QVERIFY(r.skip_special_tokens);
    }

    void completion_prompt_forms_data() {
        QTest::addColumn<QString>("prompt");
        QTest::addColumn<int>("n_prompts");
        QTest::addColumn<int>("first_ids");
        QTest::newRow("string") << R"("hello")" << 1 << 0;
        QTest::newRow("strings") << R"(["a","b","c"])" << 3 << 0;
        QTest::newRow("ids") << R"([5,6,7])" << 1 << 3;
        QTest::newRow("id lists") << R"([[5],[6,7]])" << 2 << 1;
    }
    void completion_prompt_forms() {
        QFETCH(QString, prompt);
        QFETCH(int, n_prompts);
        QFETCH(int, first_ids);
        const json body = json::parse(R"({"prompt":)" + prompt.toStdString() + R"(,"logprobs":2,"n":2,"echo":true})");
        const ParsedGeneration p = parse_completion_request(body, ServerOptions{});
        QCOMPARE(int(p.prompts.size()), n_prompts);
        QCOMPARE(p.n_choices(), 2 * n_prompts);
        QCOMPARE(int(p.prompts[0].prompt_ids.size()), first_ids);
        QCOMPARE(p.prompts[0].prompt.has_value(), first_ids == 0);
        QCOMPARE(p.prompts[0].logprobs, 2);
        QVERIFY(p.echo);
    }

    void lora_path_stays_inside_roots() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        const fs::path root = fs::path(tmp.path().toStdString()) / "adapters";
        fs::create_directories(root / "a");
        fs::create_directories(fs::path(tmp.path().toStdString()) / "outside");
        fs::create_symlink(fs::path(tmp.path().toStdString()) / "outside", root / "link");
        const std::vector<std::string> roots{root.string()};
        QCOMPARE(resolve_adapter_path((root / "a").string(), roots, "lora_path"), (root / "a").string());
        QCOMPARE(resolve_adapter_path((root / "a" / ".." / "a").string(), roots, "lora_path"), (root / "a").string());
        for (const fs::path& bad : {root / ".." / "outside", root / "link", root, root / "missing"}) {
            try {
                resolve_adapter_path(bad.string(), roots, "lora_path");
                QFAIL(qPrintable("accepted " + QString::fromStdString(bad.string())));
            } catch (const ApiError& e) {
                QCOMPARE(e.param, std::string("lora_path"));
            }
        }
        QVERIFY_THROWS_EXCEPTION(ApiError, resolve_adapter_path((root / "a").string(), {}, "lora_path"));
    }

    // Hub ids resolve from the Hugging Face cache (even without adapter roots), never outside it; without a cache
    // they are refused as before.
    void lora_path_takes_hub_ids_from_the_cache() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        const fs::path cache = tmp.path().toStdString();
        const std::string commit(40, 'a');
        const fs::path repo = cache / "models--acme--sql-lora";
        fs::create_directories(repo / "blobs");
        fs::create_directories(repo / "refs");
        fs::create_directories(repo / "snapshots" / commit);
        std::ofstream(repo / "blobs" / "cfg") << R"({"peft_type":"LORA"})";
        std::ofstream(repo / "refs" / "main") << commit;
        fs::create_symlink("../../blobs/cfg", repo / "snapshots" / commit / "adapter_config.json");
        const std::string snapshot = fs::canonical(repo / "snapshots" / commit).string();
        QCOMPARE(resolve_adapter_path("acme/sql-lora", {}, "lora_path", cache.string()), snapshot);
        QCOMPARE(resolve_adapter_path("acme/sql-lora@" + commit, {}, "lora_path", cache.string()), snapshot);
        QCOMPARE(adapter_name_for("acme/sql-lora@main", snapshot), std::string("sql-lora"));
        try {
            resolve_adapter_path("acme/absent", {}, "lora_path", cache.string());
            QFAIL("accepted an id that is not cached");
        } catch (const ApiError& e) {
            QCOMPARE(e.param, std::string("lora_path"));
            QVERIFY2(std::string(e.what()).find("loradeskd pull acme/absent --adapter") != std::string::npos, e.what());
        }
        for (const char* bad : {"../../etc", "acme/sql-lora@../../x", "/etc"})
            QVERIFY_THROWS_EXCEPTION(ApiError, resolve_adapter_path(bad, {}, "lora_path", cache.string()));
        QVERIFY_THROWS_EXCEPTION(ApiError, resolve_adapter_path("acme/sql-lora", {}, "lora_path"));  // no cache given
    }

    void deep_json_is_refused_while_parsing() {
        // {"a": [[...]]}: the object is one level, each bracket one more.
        auto nested = [](int levels) {
            return "{\"a\":" + std::string(std::size_t(levels - 1), '[') + std::string(std::size_t(levels - 1), ']') +
                   "}";
        };
        QVERIFY(parse_json_body(nested(kMaxJsonDepth)).is_object());
        for (int levels : {kMaxJsonDepth + 1, 35000}) {
            try {
                parse_json_body(nested(levels));
                QFAIL(qPrintable(QString("accepted %1 levels").arg(levels)));
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QVERIFY2(std::string(e.what()).find("deeper than 128") != std::string::npos, e.what());
            }
        }
    }

    void documents_too_large_to_hold_are_refused_while_parsing() {
        // A value costs 16 bytes parsed, an object key ~100: counts, not only bytes, bound the parsed document.
        std::string values = "{\"a\":[0";
        for (std::size_t i = 0; i < kMaxJsonValues; ++i) values += ",0";
        std::string keys = "{\"k\":0";
        for (std::size_t i = 0; i < kMaxJsonKeys; ++i) keys += ",\"k" + std::to_string(i) + "\":0";
        for (const auto& [body, what] :
             {std::pair{values + "]}", "JSON values"}, std::pair{keys + "}", "object keys"}}) {
            try {
                parse_json_body(body);
                QFAIL(what);
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QVERIFY2(std::string(e.what()).find(what) != std::string::npos, e.what());
            }
        }
    }

    // A string longer than any prompt may be is refused by a scan of the raw body, before the parser copies it.
    void strings_over_the_prompt_bound_are_refused_before_parsing() {
        const std::string fits(100, 'a'), over(101, 'a');
        const std::string quote_escaped = std::string(49, 'a') + '"' + std::string(49, 'a');  // 100 bytes as written
        QVERIFY(parse_json_body(json{{"prompt", fits}, {"stop", {"x"}}}.dump(), {100, 0}).is_object());
        QVERIFY(parse_json_body(json{{"prompt", quote_escaped}}.dump(), {100, 0}).is_object());
        QVERIFY(parse_json_body(json{{"prompt", over}}.dump(), {}).is_object());  // 0: no bound
        const std::string unterminated = json{{"prompt", over}}.dump().substr(0, 120);
        for (const std::string& body :
             {json{{"prompt", over}}.dump(), json{{"prompt", "a"}, {"x", {{over, 1}}}}.dump(), unterminated}) {
            try {
                parse_json_body(body, {100, 0});
                QFAIL("accepted a string over the bound");
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QVERIFY2(std::string(e.what()).find("longer than 100 bytes") != std::string::npos, e.what());
            }
        }
    }

    // A "type" that is not a string is a 400 naming what is wrong, not a JSON type error (a 500); found by
    // fuzz_request_parse on the H100 machine's long run.
    void part_and_tool_types_that_are_not_strings_are_refused() {
        ServerOptions options;
        const std::vector<std::pair<json, std::string>> cases = {
            {json::parse(R"({"messages":[{"role":"user","content":[{"type":{"url":"data:,"}}]}]})"), "messages"},
            {json::parse(R"({"messages":[{"role":"user","content":[{"type":9223372036854775808}]}]})"), "messages"},
            {json::parse(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":1}]})"), "tools"},
            {json::parse(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":[]}})"), "tool_choice"}};
        for (const auto& [body, param] : cases) {
            try {
                parse_chat_request(body, options);
                QFAIL(body.dump().c_str());
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QCOMPARE(e.param, param);
            }
        }
    }

    // Prompt lists are counted while parsing; token ids of one tokenized prompt are not prompts.
    void prompt_lists_are_counted_while_parsing() {
        const BodyLimits two{0, 2};
        QVERIFY(parse_json_body(R"({"prompt":["a","b"],"stop":["x","y","z"]})", two).is_object());
        QVERIFY(parse_json_body(R"({"prompt":[1,2,3,4,5]})", two).is_object());
        QVERIFY(parse_json_body(R"({"prompt":[[1,2],[3]],"x":{"prompt":["a","b","c"]}})", two).is_object());
        for (const char* body : {R"({"prompt":["a","b","c"]})", R"({"prompt":[[1],[2],[3]]})"}) {
            try {
                parse_json_body(body, two);
                QFAIL(body);
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QCOMPARE(e.param, std::string("prompt"));
            }
        }
    }

    void prompts_over_the_byte_bound_are_refused_before_tokenizing() {
        ServerOptions options;
        options.max_prompt_bytes = 100;
        const std::string fits(100, 'a'), over(101, 'a');
        QCOMPARE(parse_completion_request(json{{"prompt", fits}}, options).prompts.size(), std::size_t(1));
        const json chat_over = {
            {"messages", {{{"role", "system"}, {"content", fits}}, {{"role", "user"}, {"content", "x"}}}}};
        const std::vector<std::pair<json, std::string>> cases = {
            {json{{"prompt", over}}, "prompt"}, {json{{"prompt", {"a", over}}}, "prompt"}, {chat_over, "messages"}};
        for (const auto& [body, param] : cases) {
            try {
                param == "messages" ? parse_chat_request(body, options) : parse_completion_request(body, options);
                QFAIL("accepted a prompt over the byte bound");
            } catch (const ApiError& e) {
                QCOMPARE(e.status, 400);
                QCOMPARE(e.param, param);
                QCOMPARE(e.code, json("context_length_exceeded"));
                QVERIFY2(std::string(e.what()).find("maximum context length") != std::string::npos, e.what());
            }
        }
    }

    void integers_at_the_edges_are_accepted() {
        const json body = json::parse(R"({"messages":[{"role":"user","content":"x"}],"seed":9223372036854775807,
                                          "top_k":2147483647,"max_tokens":2147483647})");
        const ParsedGeneration p = parse_chat_request(body, ServerOptions{});
        QCOMPARE(p.prompts[0].sampling.seed.value(), uint64_t(9223372036854775807ull));
        QCOMPARE(p.prompts[0].sampling.top_k, 2147483647);
        QCOMPARE(p.prompts[0].stop.max_tokens, 2147483647);
    }

    void body_must_be_a_json_object() {
        QVERIFY_THROWS_EXCEPTION(ApiError, parse_json_body("{bad"));
        QVERIFY_THROWS_EXCEPTION(ApiError, parse_json_body("[1]"));
        QVERIFY(parse_json_body("{}").is_object());
    }
};

QTEST_GUILESS_MAIN(TstServerParse)
#include "tst_server_parse.moc"
