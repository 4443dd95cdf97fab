// Logging facade. spdlog stays inside log.cpp; callers format with fmt.
// Thread-safe. Extra sinks (the UI log view, tests) receive every message at or above the level.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

namespace loradesk::log {

enum class Level { trace = 0, debug, info, warn, error, off };

void write(Level level, std::string_view message);
void set_level(Level level);
Level level();
bool parse_level(std::string_view name, Level* out);
std::string_view level_name(Level level);

using Sink = std::function<void(Level, std::string_view)>;
// Returns an id for remove_sink. Sinks are called on the logging thread; keep them short.
int add_sink(Sink sink);
void remove_sink(int id);

template <class... Args>
void trace(fmt::format_string<Args...> f, Args&&... args) {
    if (level() <= Level::trace) write(Level::trace, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
    if (level() <= Level::debug) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    if (level() <= Level::info) write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    if (level() <= Level::warn) write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
    if (level() <= Level::error) write(Level::error, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace loradesk::log
