// Helpers shared by the server tests: building requests for the Router, capturing streamed bodies, and
// splitting SSE bodies into events.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http_types.h"

namespace loradesk::testing {

inline server::HttpRequest make_request(std::string method, std::string path, std::string body = {},
                                        std::vector<std::pair<std::string, std::string>> headers = {}) {
    server::HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.body = std::move(body);
    for (auto& [k, v] : headers) r.headers[server::to_lower(k)] = v;
    return r;
}

inline server::HttpRequest post_json(std::string path, const nlohmann::json& body) {
    return make_request("POST", std::move(path), body.dump(), {{"content-type", "application/json"}});
}

// Collects what a streaming producer writes; fails writes after `fail_after` successful ones (client gone).
class CaptureSink : public server::StreamSink {
  public:
    explicit CaptureSink(int fail_after = -1) : m_fail_after(fail_after) {}
    bool write(std::string_view data) override {
        if (m_fail_after >= 0 && m_writes >= m_fail_after) return false;
        ++m_writes;
        m_data.append(data);
        return true;
    }
    const std::string& data() const { return m_data; }
    int writes() const { return m_writes; }

  private:
    int m_fail_after;
    int m_writes = 0;
    std::string m_data;
};

inline std::string run_stream(server::HttpResponse& r, int fail_after = -1) {
    CaptureSink sink(fail_after);
    if (r.stream) r.stream(sink);
    return sink.data();
}

// "data: X\n\n" events in order (comments are returned as-is, e.g. ": keep-alive").
inline std::vector<std::string> sse_events(const std::string& body) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
        const std::size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) {
            out.push_back("<unterminated>" + body.substr(pos));
            break;
        }
        std::string ev = body.substr(pos, end - pos);
        if (ev.rfind("data: ", 0) == 0) ev = ev.substr(6);
        out.push_back(ev);
        pos = end + 2;
    }
    return out;
}

}  // namespace loradesk::testing
