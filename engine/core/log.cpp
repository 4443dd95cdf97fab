#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

namespace loradesk::log {
namespace {

std::atomic<Level> g_level{Level::info};

struct Sinks {
    std::mutex mutex;
    std::map<int, Sink> sinks;
    int next_id = 1;
};

Sinks& sinks() {
    static Sinks s;
    return s;
}

std::shared_ptr<spdlog::logger> logger() {
    // stderr so that --json output on stdout stays clean; no colours when not a terminal (journald).
    static std::shared_ptr<spdlog::logger> l = [] {
        std::shared_ptr<spdlog::logger> lg;
        if (isatty(STDERR_FILENO)) {
            lg = spdlog::stderr_color_mt("loradesk");
        } else {
            lg = std::make_shared<spdlog::logger>("loradesk", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        }
        lg->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
        lg->set_level(spdlog::level::trace);
        return lg;
    }();
    return l;
}

spdlog::level::level_enum to_spd(Level level) {
    switch (level) {
        case Level::trace:
            return spdlog::level::trace;
        case Level::debug:
            return spdlog::level::debug;
        case Level::info:
            return spdlog::level::info;
        case Level::warn:
            return spdlog::level::warn;
        case Level::error:
            return spdlog::level::err;
        case Level::off:
            return spdlog::level::off;
    }
    return spdlog::level::info;
}

}  // namespace

void write(Level lvl, std::string_view message) {
    if (lvl < g_level.load(std::memory_order_relaxed) || lvl == Level::off) return;
    logger()->log(to_spd(lvl), "{}", message);
    auto& s = sinks();
    std::lock_guard lock(s.mutex);
    for (auto& [id, sink] : s.sinks) sink(lvl, message);
}

void set_level(Level lvl) { g_level.store(lvl); }
Level level() { return g_level.load(std::memory_order_relaxed); }

bool parse_level(std::string_view name, Level* out) {
    static const std::pair<std::string_view, Level> kNames[] = {{"trace", Level::trace}, {"debug", Level::debug},
                                                                {"info", Level::info},   {"warn", Level::warn},
                                                                {"error", Level::error}, {"off", Level::off}};
    for (auto& [n, l] : kNames) {
        if (n == name) {
            *out = l;
            return true;
        }
    }
    return false;
}

std::string_view level_name(Level lvl) {
    switch (lvl) {
        case Level::trace:
            return "trace";
        case Level::debug:
            return "debug";
        case Level::info:
            return "info";
        case Level::warn:
            return "warn";
        case Level::error:
            return "error";
        case Level::off:
            return "off";
    }
    return "info";
}

int add_sink(Sink sink) {
    auto& s = sinks();
    std::lock_guard lock(s.mutex);
    int id = s.next_id++;
    s.sinks.emplace(id, std::move(sink));
    return id;
}

void remove_sink(int id) {
    auto& s = sinks();
    std::lock_guard lock(s.mutex);
    s.sinks.erase(id);
}

}  // namespace loradesk::log
