#include "hub/download/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "core/error.h"

namespace loradesk::hub {

namespace {

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
    HttpReply* reply = nullptr;
    CURL* curl = nullptr;
    std::FILE* out = nullptr;  // null: the body goes to reply->body
    const std::function<void(long)>* on_status = nullptr;
    const std::function<void(std::size_t)>* on_bytes = nullptr;
    const std::atomic<bool>* cancel = nullptr;
    bool status_seen = false;
    bool write_failed = false;
};

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or a 100): forget the old headers
        t->reply->headers.clear();
        return size * n;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) return size * n;
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const auto first = value.find_first_not_of(" \t"), last = value.find_last_not_of(" \t\r\n");
    t->reply->headers[name] = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
    return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::size_t bytes = size * n;
    if (t->cancel && t->cancel->load()) return 0;
    if (!t->status_seen) {
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->reply->status);
        t->status_seen = true;
        if (t->out && t->on_status && t->reply->status >= 200 && t->reply->status < 300)
            (*t->on_status)(t->reply->status);
    }
    if (t->out && t->reply->status >= 200 && t->reply->status < 300) {
        if (std::fwrite(data, 1, bytes, t->out) != bytes) {
            t->write_failed = true;
            return 0;
        }
        if (t->on_bytes) (*t->on_bytes)(bytes);
    } else if (t->reply->body.size() < (std::size_t(64) << 10)) {
        t->reply->body.append(data, bytes);
    }
    return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return t->cancel && t->cancel->load() ? 1 : 0;
}

}  // namespace

struct HttpSession::Impl {
    CURL* curl = nullptr;
};

HttpSession::HttpSession() : m(std::make_unique<Impl>()) {
    global_init();
    m->curl = curl_easy_init();
    if (!m->curl) throw_error(ErrorCode::internal, "libcurl could not create a session (curl_easy_init)");
}

HttpSession::~HttpSession() { curl_easy_cleanup(m->curl); }

HttpReply HttpSession::fetch(const HttpRequest& request) { return download(request, nullptr, {}, {}, nullptr); }

HttpReply HttpSession::download(const HttpRequest& request, std::FILE* out, const std::function<void(long)>& on_status,
                                const std::function<void(std::size_t)>& on_bytes, const std::atomic<bool>* cancel) {
    HttpReply reply;
    Transfer t{&reply, m->curl, out, &on_status, &on_bytes, cancel};
    CURL* c = m->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(c, CURLOPT_NOBODY, request.head ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    // Redirects may go from https to https or http only; libcurl keeps Authorization to the first host.
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled connection: nothing for 60 s
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "loradesk/" LORADESK_VERSION " (libcurl)");
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");  // sizes and hashes are of the stored bytes
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    std::string range;
    if (request.range_from >= 0) {
        range = std::to_string(request.range_from) + "-";
        curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
    }
    if (request.post) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
    }
    curl_slist* headers = nullptr;
    for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    const CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
    if (cancel && cancel->load()) {
        reply.cancelled = true;
        reply.transport_error = "cancelled";
    } else if (t.write_failed) {
        reply.transport_error = "cannot write the downloaded bytes to disk (disk full?)";
    } else if (rc != CURLE_OK) {
        reply.transport_error = curl_easy_strerror(rc);
    }
    return reply;
}

}  // namespace loradesk::hub
