// `loradeskd catalog list|show|import|remove|pin|unpin|alias|stats`: the adapter catalog from the command
// line, on the same data directory that `loradeskd serve --data-dir` uses. Text tables, or --json.
#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "catalog/adapter_import.h"
#include "catalog/catalog.h"
#include "cli.h"
#include "core/error.h"
#include "engine_cli.h"
#include "lora/adapter_summary.h"

namespace loradesk {
namespace {

using nlohmann::json;
using namespace catalog;

json record_json(const AdapterRecord& r) {
    return {{"name", r.name},
            {"digest", r.digest},
            {"path", r.path},
            {"base_model", r.declared_base},
            {"checked_against", r.checked_base},
            {"compatible", compat_name(r.compat)},
            {"incompatibility", r.compat_reason},
            {"rank", r.rank},
            {"alpha", r.alpha},
            {"rslora", r.rslora},
            {"targets", r.targets},
            {"layers", r.layers},
            {"size_bytes", r.size_bytes},
            {"dtype", r.dtype},
            {"created_unix", r.created_unix},
            {"last_used_unix", r.last_used_unix},
            {"pinned", r.pinned},
            {"notes", r.notes},
            {"tier", tier_name(r.tier)},
            {"missing", r.missing},
            {"requests_total", r.requests_total},
            {"version", r.version}};
}

json point_json(const StatsPoint& p) {
    return {{"minute", p.minute},
            {"time_unix", p.minute * 60},
            {"requests", p.requests},
            {"prompt_tokens", p.prompt_tokens},
            {"cached_tokens", p.cached_tokens},
            {"completion_tokens", p.completion_tokens},
            {"errors", p.errors},
            {"cold_loads", p.cold_loads},
            {"load_ms_total", p.load_ms_total},
            {"ttft_p50_ms", p.ttft_p50_ms},
            {"ttft_p95_ms", p.ttft_p95_ms},
            {"e2e_p50_ms", p.e2e_p50_ms},
            {"e2e_p95_ms", p.e2e_p95_ms}};
}

std::string arg(const cli::Args& a, std::size_t i, const char* what) {
    if (a.positional().size() <= i)
        throw_expected(ErrorCode::invalid_argument, fmt::format("missing {} (see loradeskd catalog --help)", what));
    return a.positional()[i];
}

void print(const cli::Args& a, const json& j, const std::string& text) {
    if (a.flag("json"))
        std::printf("%s\n", j.dump(2).c_str());
    else
        std::fputs(text.c_str(), stdout);
}

int cmd_list(Catalog& c, const cli::Args& a) {
    ListQuery q;
    q.name_contains = a.get("name");
    q.base_model = a.get("base");
    if (a.flag("pinned")) q.pinned = true;
    if (a.has("tier")) {
        Tier t;
        if (!parse_tier(a.get("tier"), &t))
            throw_expected(ErrorCode::invalid_argument, "--tier expects gpu, cpu or disk");
        q.tier = t;
    }
    if (a.has("sort") && !parse_sort_key(a.get("sort"), &q.sort))
        throw_expected(ErrorCode::invalid_argument, "--sort expects name, last-used, requests or size");
    q.limit = int(a.get_int("limit", 0));
    auto rows = c.list(q);
    json j = json::array();
    std::string text = fmt::format("{:<28} {:<6} {:>5} {:>10} {:>9} {:<4} {:<12} {}\n", "NAME", "PINNED", "RANK",
                                   "SIZE", "REQUESTS", "TIER", "COMPATIBLE", "DIGEST");
    for (auto& r : rows) {
        j.push_back(record_json(r));
        text += fmt::format("{:<28} {:<6} {:>5} {:>10} {:>9} {:<4} {:<12} {}{}\n", r.name, r.pinned ? "yes" : "no",
                            r.rank, r.size_bytes, r.requests_total, tier_name(r.tier), compat_name(r.compat),
                            r.digest.substr(0, 12), r.missing ? " (missing)" : "");
    }
    print(a, j, text);
    return 0;
}

int cmd_show(Catalog& c, const cli::Args& a) {
    auto d = c.show(arg(a, 1, "adapter name"));
    json j = record_json(d.adapter);
    j["aliases"] = d.aliases;
    j["versions"] = json::array();
    for (auto& v : d.versions)
        j["versions"].push_back({{"version", v.version},
                                 {"digest", v.digest},
                                 {"path", v.path},
                                 {"created_unix", v.created_unix},
                                 {"current", v.current}});
    j["events"] = json::array();
    for (auto& e : d.events)
        j["events"].push_back({{"time_ms", e.time_ms},
                               {"kind", event_kind_name(e.kind)},
                               {"name", e.name},
                               {"digest", e.digest},
                               {"detail", e.detail}});
    std::string text;
    for (auto& [k, v] : j.items())
        if (!v.is_array()) text += fmt::format("{:<16} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    text += fmt::format("{:<16} {}\n", "aliases", j["aliases"].dump());
    for (auto& v : d.versions)
        text += fmt::format("version {:<8} {} {}{}\n", v.version, v.digest.substr(0, 12), v.path,
                            v.current ? " (current)" : "");
    for (auto& e : d.events) text += fmt::format("event {} {:<8} {}\n", e.time_ms, event_kind_name(e.kind), e.detail);
    print(a, j, text);
    return 0;
}

int cmd_import(Catalog& c, const cli::Args& a) {
    const Summarizer summarize = [](const std::string& dir) { return lora::summarize_adapter(dir); };
    if (a.positional().size() < 2) arg(a, 1, "adapter folder");
    json j = {{"registered", json::array()}, {"failed", json::array()}};
    std::string text;
    for (std::size_t i = 1; i < a.positional().size(); ++i) {
        auto report = import_path(c, a.positional()[i], summarize);
        for (auto& r : report.registered) {
            const char* what = r.outcome == RegisterOutcome::added         ? "added"
                               : r.outcome == RegisterOutcome::new_version ? "new version"
                                                                           : "unchanged";
            j["registered"].push_back(
                {{"name", r.name}, {"digest", r.digest}, {"version", r.version}, {"outcome", what}});
            text += fmt::format("{:<28} v{} {} ({})\n", r.name, r.version, r.digest.substr(0, 12), what);
        }
        for (auto& [dir, err] : report.failed) {
            j["failed"].push_back({{"path", dir}, {"error", err}});
            text += fmt::format("{}: error: {}\n", dir, err);
        }
    }
    print(a, j, text);
    return j["failed"].empty() ? 0 : 1;
}

int cmd_stats(Catalog& c, const cli::Args& a) {
    auto rec = c.find(arg(a, 1, "adapter name"));
    if (!rec) c.require_name(a.positional()[1]);
    int64_t now_min =
        std::chrono::duration_cast<std::chrono::minutes>(std::chrono::system_clock::now().time_since_epoch()).count();
    int64_t minutes = a.get_int("minutes", 60);
    if (minutes <= 0) throw_expected(ErrorCode::invalid_argument, "--minutes must be positive");
    auto series = c.stats_series(rec->digest, now_min - minutes + 1, now_min);
    auto total = c.stats_total(rec->digest, now_min - minutes + 1, now_min);
    json j = {{"name", rec->name},
              {"digest", rec->digest},
              {"minutes", minutes},
              {"total", point_json(total)},
              {"series", json::array()}};
    std::string text = fmt::format("{:<12} {:>8} {:>8} {:>8} {:>8} {:>6} {:>10} {:>10}\n", "TIME", "REQS", "PROMPT",
                                   "CACHED", "COMPL", "ERRS", "TTFT p50", "TTFT p95");
    for (auto& p : series) {
        j["series"].push_back(point_json(p));
        text +=
            fmt::format("{:<12} {:>8} {:>8} {:>8} {:>8} {:>6} {:>10.1f} {:>10.1f}\n", p.minute * 60, p.requests,
                        p.prompt_tokens, p.cached_tokens, p.completion_tokens, p.errors, p.ttft_p50_ms, p.ttft_p95_ms);
    }
    text += fmt::format(
        "total: {} requests, {} errors, TTFT p50 {:.1f} ms p95 {:.1f} ms, e2e p50 {:.1f} ms p95 {:.1f} ms\n",
        total.requests, total.errors, total.ttft_p50_ms, total.ttft_p95_ms, total.e2e_p50_ms, total.e2e_p95_ms);
    print(a, j, text);
    return 0;
}

int run_catalog(const cli::Args& a) {
    std::string action = arg(a, 0, "action (list, show, import, remove, pin, unpin, alias, stats)");
    std::string data_dir = a.has("data-dir") ? a.get("data-dir") : cli::default_data_dir();
    CatalogOptions opts;
    opts.start_fresh_if_corrupt = a.flag("start-fresh");
    Catalog c(catalog_path_in(data_dir, true), opts);
    if (!c.moved_aside().empty())
        std::fprintf(stderr, "loradeskd catalog: the damaged catalog was kept as %s; started a new one\n",
                     c.moved_aside().c_str());
    if (action == "list") return cmd_list(c, a);
    if (action == "show") return cmd_show(c, a);
    if (action == "import") return cmd_import(c, a);
    if (action == "stats") return cmd_stats(c, a);
    if (action == "remove" || action == "pin" || action == "unpin") {
        std::string name = c.require_name(arg(a, 1, "adapter name"));
        if (action == "remove")
            c.remove_adapter(name);
        else
            c.set_pinned(name, action == "pin");
        print(a, {{"name", name}, {"action", action}, {"ok", true}}, fmt::format("{}: {}\n", name, action));
        return 0;
    }
    if (action == "alias") {
        std::string alias = arg(a, 1, "alias");
        if (a.flag("remove"))
            c.remove_alias(alias);
        else
            c.set_alias(alias, arg(a, 2, "adapter name the alias points to"));
        print(a, {{"alias", alias}, {"removed", a.flag("remove")}, {"ok", true}}, fmt::format("alias {}: ok\n", alias));
        return 0;
    }
    throw_expected(ErrorCode::invalid_argument,
                   fmt::format("unknown catalog action '{}' (expected list, show, import, remove, pin, unpin, alias, "
                               "stats)",
                               action));
}

LORADESK_COMMAND({
    "catalog",
    "inspect and edit the adapter catalog (adapters, pins, aliases, statistics)",
    "loradeskd catalog list|show NAME|import DIR...|remove NAME|pin NAME|unpin NAME|alias ALIAS NAME|stats NAME "
    "[--data-dir DIR] [--json]",
    {
        {"data-dir", "DIR", "data directory (default $XDG_DATA_HOME/loradesk or ~/.local/share/loradesk)"},
        {"json", "", "machine-readable output"},
        {"start-fresh", "", "if the catalog is damaged, keep it as catalog.sqlite3.corrupt-<time> and start a new one"},
        {"name", "SUBSTR", "list: names containing SUBSTR (any case)"},
        {"base", "MODEL", "list: adapters for this base model"},
        {"pinned", "", "list: pinned adapters only"},
        {"tier", "gpu|cpu|disk", "list: adapters last seen in this tier"},
        {"sort", "KEY", "list: name, last-used, requests or size"},
        {"limit", "N", "list: at most N rows"},
        {"minutes", "N", "stats: the last N minutes (default 60)"},
        {"remove", "", "alias: remove ALIAS instead of setting it"},
    },
    run_catalog,
});

}  // namespace
}  // namespace loradesk
