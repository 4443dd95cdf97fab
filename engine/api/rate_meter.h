// RateMeter: events per second over a sliding window (the dashboard's tokens/s). Not thread-safe;
// the owner locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

namespace loradesk::api {

class RateMeter {
  public:
    explicit RateMeter(std::chrono::milliseconds window = std::chrono::seconds(5)) : m_window(window) {}

    void add(uint64_t n, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) {
        m_events.emplace_back(now, n);
        trim(now);
    }
    double per_second(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) {
        trim(now);
        uint64_t total = 0;
        for (auto& e : m_events) total += e.second;
        return double(total) / std::chrono::duration<double>(m_window).count();
    }

  private:
    void trim(std::chrono::steady_clock::time_point now) {
        while (!m_events.empty() && now - m_events.front().first > m_window) m_events.pop_front();
    }
    std::chrono::milliseconds m_window;
    std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> m_events;
};

}  // namespace loradesk::api
