// loradeskd pull: downloads a model or adapter from the Hugging Face Hub into the Hugging Face cache (the
// layout transformers and vLLM read), with a progress bar on a terminal and one line per file otherwise.
// --adapter checks the download is a PEFT adapter and registers it with a running server (--server) or says
// how to serve it; --list-adapters lists the Hub's adapters of a base model instead of downloading.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/error.h"
#include "hub/download/pull.h"
#include "hub/hf_cache.h"
#include "lora/adapter_summary.h"
#include "model/adapter_name.h"

namespace {

using namespace loradesk;
using Stage = hub::PullFileState::Stage;

std::string human_bytes(int64_t n) {
    const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = double(std::max<int64_t>(n, 0));
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, ++u;
    return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

// A one-line bar redrawn on a terminal (stderr), or one line per finished file when stderr is not one.
class ProgressPrinter {
  public:
    ProgressPrinter() : m_tty(::isatty(STDERR_FILENO) == 1), m_start(Clock::now()), m_last(m_start) {}

    void progress(const hub::PullProgress& p) {
        if (!m_tty) return;
        const auto now = Clock::now();
        const double dt = std::chrono::duration<double>(now - m_last).count();
        if (dt > 0.05) {
            const double rate = double(p.bytes_done - m_last_bytes) / dt;
            m_rate = m_rate <= 0 ? rate : 0.7 * m_rate + 0.3 * rate;
            m_last = now;
            m_last_bytes = p.bytes_done;
        }
        const double frac = p.bytes_total > 0 ? std::min(1.0, double(p.bytes_done) / double(p.bytes_total)) : 0.0;
        const int width = 30, filled = int(frac * width);
        std::string bar(std::size_t(filled), '=');
        if (filled < width) bar += '>' + std::string(std::size_t(width - filled - 1), ' ');
        std::string eta = "--:--";
        if (m_rate > 1 && p.bytes_total > p.bytes_done) {
            const int s = int(double(p.bytes_total - p.bytes_done) / m_rate);
            eta = fmt::format("{}:{:02}", s / 60, s % 60);
        }
        std::fprintf(stderr, "\r\033[K[%s] %3d%%  %s / %s  %s/s  ETA %s  (%d/%d files)", bar.c_str(), int(frac * 100),
                     human_bytes(p.bytes_done).c_str(), human_bytes(p.bytes_total).c_str(),
                     human_bytes(int64_t(std::max(0.0, m_rate))).c_str(), eta.c_str(), p.files_done, p.files_total);
        std::fflush(stderr);
        m_drawn = true;
    }
    // Failed files are left to the error pull() throws, which lists them.
    void file(const hub::PullFileState& f) {
        if (m_tty || f.stage == Stage::failed) return;
        std::fprintf(stderr, "%s %s (%s)\n", f.stage == Stage::done ? "downloaded" : "cached    ", f.path.c_str(),
                     human_bytes(std::max<int64_t>(f.size, 0)).c_str());
        std::fflush(stderr);
    }
    void finish() {
        if (m_tty && m_drawn) std::fputs("\n", stderr);
    }

  private:
    using Clock = std::chrono::steady_clock;
    bool m_tty;
    Clock::time_point m_start, m_last;
    int64_t m_last_bytes = 0;
    double m_rate = 0;
    bool m_drawn = false;
};

int list_adapters(const hub::HubId& base, const cli::Args& args) {
    hub::HubApi api(hub::HubConfig::from_environment());
    hub::HttpSession http;
    const auto models = api.search_adapters(http, base.repo, int(args.get_int("limit", 20)));
    if (models.empty()) {
        std::printf("the Hub lists no adapters of %s (base_model:adapter:%s)\n", base.repo.c_str(), base.repo.c_str());
        return 0;
    }
    std::printf("%-60s %10s %12s %8s\n", "adapter", "size", "downloads", "likes");
    for (const auto& m : models) {
        // The listing has no sizes: each adapter's file list (one request each) gives its download size.
        std::string size = "?";
        if (auto id = hub::parse_hub_id(m.id)) {
            try {
                int64_t bytes = 0;
                for (const hub::RepoFile& f : api.model_info(http, *id).files) bytes += std::max<int64_t>(f.size, 0);
                size = human_bytes(bytes);
            } catch (const Error&) {
                // gated or gone since the listing: leave the size unknown
            }
        }
        std::printf("%-60s %10s %12lld %8lld\n", m.id.c_str(), size.c_str(), (long long)m.downloads,
                    (long long)m.likes);
    }
    std::printf("\npull one with: loradeskd pull ID --adapter\n");
    return 0;
}

// Loads the pulled adapter into a running loradeskd (POST /v1/load_lora_adapter with the Hub id).
void register_with_server(const std::string& server, const std::string& name, const std::string& reference) {
    hub::HttpSession http;
    hub::HttpRequest r;
    r.url = server + (server.back() == '/' ? "" : "/") + "v1/load_lora_adapter";
    r.post = true;
    r.body = nlohmann::json{{"lora_name", name}, {"lora_path", reference}}.dump();
    r.headers = {"Content-Type: application/json"};
    if (const char* key = std::getenv("LORADESK_API_KEY"); key && *key)
        r.headers.push_back(std::string("Authorization: Bearer ") + key);
    const hub::HttpReply reply = http.fetch(r);
    if (!reply.transport_error.empty())
        throw_expected(ErrorCode::unavailable, "cannot reach the server at " + server + ": " + reply.transport_error);
    if (reply.status != 200) {
        auto j = nlohmann::json::parse(reply.body, nullptr, false);
        const std::string message = j.is_object() && j.contains("error") && j["error"].is_object()
                                        ? j["error"].value("message", reply.body)
                                        : reply.body;
        throw_expected(ErrorCode::invalid_argument, "the server at " + server + " did not load the adapter (" +
                                                        std::to_string(reply.status) + "): " + message);
    }
    std::printf("loaded into %s as '%s'\n", server.c_str(), name.c_str());
}

void finish_adapter(const hub::HubId& id, const hub::PullResult& result, const cli::Args& args) {
    const model::AdapterSummary s = lora::summarize_adapter(result.snapshot);
    const std::string name = args.get("name", id.repo.substr(id.repo.find('/') + 1));
    model::check_adapter_name(name);
    std::printf("adapter: rank %d, %zu target modules, base model %s\n", s.rank, s.targets.size(),
                s.base_model.empty() ? "(not given)" : s.base_model.c_str());
    const std::string reference = id.repo + "@" + result.commit;
    if (args.has("server")) {
        register_with_server(args.get("server"), name, reference);
        return;
    }
    std::printf("serve it:   loradeskd serve --model %s --adapter %s=%s\n",
                s.base_model.empty() ? "BASE" : s.base_model.c_str(), name.c_str(), id.text().c_str());
    std::printf("or load it: POST /v1/load_lora_adapter {\"lora_name\": \"%s\", \"lora_path\": \"%s\"}\n", name.c_str(),
                id.text().c_str());
}

int run_pull(const cli::Args& args) {
    if (args.positional().size() != 1)
        throw_expected(ErrorCode::invalid_argument, "give one Hub id: loradeskd pull ORG/NAME [--revision R]");
    hub::HubId id = hub::require_hub_id(args.positional()[0]);
    if (args.has("revision")) {
        if (!id.revision.empty())
            throw_expected(ErrorCode::invalid_argument, "give the revision once: as ID@REV or as --revision");
        id.revision = args.get("revision");
        if (auto p = hub::revision_problem(id.revision))
            throw_expected(ErrorCode::invalid_argument, "--revision: " + *p);
    }
    if (args.flag("list-adapters")) return list_adapters(id, args);

    hub::PullOptions options;
    options.includes = args.all("include");
    options.workers = int(args.get_int("workers", options.workers));
    if (options.workers < 1 || options.workers > 64)
        throw_expected(ErrorCode::invalid_argument, "--workers must be between 1 and 64");
    ProgressPrinter printer;
    options.on_progress = [&](const hub::PullProgress& p) { printer.progress(p); };
    options.on_file = [&](const hub::PullFileState& f) { printer.file(f); };
    hub::PullResult result;
    try {
        result = hub::pull(id, options);
    } catch (...) {
        printer.finish();
        throw;
    }
    printer.finish();
    if (result.offline) {
        std::printf("HF_HUB_OFFLINE is set: %s is in the cache, not checked against the Hub\n", id.text().c_str());
    } else {
        std::printf("%s: %d files downloaded (%s), %d already cached\n", id.text().c_str(), result.files_downloaded,
                    human_bytes(result.bytes_downloaded).c_str(), result.files_cached);
    }
    std::printf("commit %s\n%s\n", result.commit.c_str(), result.snapshot.c_str());
    if (args.flag("adapter")) finish_adapter(id, result, args);
    return 0;
}

LORADESK_COMMAND(
    {"pull",
     "download a model or adapter from the Hugging Face Hub into the Hugging Face cache",
     "loradeskd pull ORG/NAME[@REV] [--revision R] [--include GLOB]... [--adapter [--name N] [--server URL]]\n"
     "       loradeskd pull BASE_ORG/NAME --list-adapters [--limit 20]",
     {{"revision", "R", "branch, tag or commit to download (default main)"},
      {"include", "GLOB", "download only the files matching GLOB (fnmatch, as huggingface_hub's allow_patterns)", true},
      {"workers", "N", "files downloaded at once (default 8)"},
      {"adapter", "", "the repository is a PEFT adapter: check it, then print how to serve it or load it (--server)"},
      {"name", "NAME", "--adapter: the name to register it under (default: the repository's name)"},
      {"server", "URL", "--adapter: load it into the loradeskd serving at URL (LORADESK_API_KEY is sent)"},
      {"list-adapters", "", "list the Hub's adapters of this base model (most downloaded first) instead"},
      {"limit", "N", "--list-adapters: how many (default 20)"}},
     &run_pull});

}  // namespace
