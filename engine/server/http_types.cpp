// Small helpers of the HTTP request/response types.
#include "server/http_types.h"

#include <arpa/inet.h>

#include <algorithm>

namespace loradesk::server {

std::string to_lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

bool is_loopback_host(std::string_view host) {
    const std::string h = to_lower(host);
    if (h == "localhost" || h == "::1" || h == "[::1]") return true;
    in_addr v4{};
    return ::inet_pton(AF_INET, h.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string HttpRequest::header(std::string_view name) const {
    auto it = headers.find(to_lower(name));
    return it == headers.end() ? std::string() : it->second;
}

void HttpResponse::set_header(std::string name, std::string value) {
    const std::string key = to_lower(name);
    for (auto& [n, v] : headers) {
        if (to_lower(n) == key) {
            v = std::move(value);
            return;
        }
    }
    headers.emplace_back(std::move(name), std::move(value));
}

std::string HttpResponse::header(std::string_view name) const {
    const std::string key = to_lower(name);
    for (const auto& [n, v] : headers)
        if (to_lower(n) == key) return v;
    return {};
}

}  // namespace loradesk::server
