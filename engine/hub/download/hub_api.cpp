#include "hub/download/hub_api.h"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace loradesk::hub {

namespace {

using nlohmann::json;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
    const auto first = s.find_first_not_of(" \t\r\n"), last = s.find_last_not_of(" \t\r\n");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

std::string token_from_file(const std::string& path) {
    std::ifstream in(path);
    std::string token;
    if (in) std::getline(in, token);
    return trim(token);
}

// `W/"abc"` -> `abc` (huggingface_hub's _normalize_etag).
std::string normalize_etag(std::string etag) {
    if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    return etag;
}

int64_t to_int64(const std::string& text) {
    if (text.empty()) return -1;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    return end && *end == '\0' && v >= 0 ? int64_t(v) : -1;
}

[[noreturn]] void bad_answer(const std::string& what) {
    throw_expected(ErrorCode::corrupt_file, "the Hub's model information is not what loradesk expects: " + what +
                                                " (is HF_ENDPOINT a Hugging Face Hub?)");
}

std::string string_field(const json& j, const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t int_field(const json& j, const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

HubConfig HubConfig::from_environment() {
    HubConfig c;
    if (auto v = env("HF_ENDPOINT"); !v.empty()) c.endpoint = v;
    while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
    c.token = trim(env("HF_TOKEN"));
    if (c.token.empty()) c.token = trim(env("HUGGING_FACE_HUB_TOKEN"));
    if (c.token.empty() && !env("HF_TOKEN_PATH").empty()) c.token = token_from_file(env("HF_TOKEN_PATH"));
    if (c.token.empty() && !env("HF_HOME").empty()) c.token = token_from_file(env("HF_HOME") + "/token");
    if (c.token.empty() && env("HF_HOME").empty() && !env("HOME").empty())
        c.token = token_from_file(env("HOME") + "/.cache/huggingface/token");
    return c;
}

std::vector<std::string> HubConfig::auth_headers() const {
    if (token.empty()) return {};
    return {"Authorization: Bearer " + token};
}

ModelInfo parse_model_info(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) bad_answer("it is not a JSON object");
    ModelInfo info;
    info.id = string_field(j, "id");
    info.commit = string_field(j, "sha");
    if (!is_commit_hash(info.commit)) bad_answer("'sha' is not a 40-hex commit hash");
    if (auto g = j.find("gated"); g != j.end()) info.gated = g->is_string() || (g->is_boolean() && g->get<bool>());
    auto siblings = j.find("siblings");
    if (siblings == j.end() || !siblings->is_array()) bad_answer("'siblings' (the file list) is missing");
    for (const json& s : *siblings) {
        if (!s.is_object()) bad_answer("a 'siblings' entry is not an object");
        RepoFile f;
        f.path = string_field(s, "rfilename");
        if (auto p = repo_file_problem(f.path))
            throw_expected(ErrorCode::invalid_argument,
                           "the Hub lists a file '" + f.path + "' that cannot be stored safely: " + *p);
        f.size = int_field(s, "size");
        f.blob_id = string_field(s, "blobId");
        if (auto lfs = s.find("lfs"); lfs != s.end() && lfs->is_object()) {
            f.sha256 = string_field(*lfs, "sha256");
            if (f.sha256.size() != 64 || !is_blob_hash(f.sha256))
                bad_answer("the sha256 of '" + f.path + "' is not 64 hex digits");
            if (int64_t size = int_field(*lfs, "size"); size >= 0) f.size = size;
        }
        info.files.push_back(std::move(f));
    }
    return info;
}

std::vector<HubModelSummary> parse_model_list(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array()) bad_answer("the model list is not a JSON array");
    std::vector<HubModelSummary> out;
    for (const json& m : j) {
        if (!m.is_object()) continue;
        HubModelSummary s;
        s.id = string_field(m, "id");
        if (s.id.empty()) s.id = string_field(m, "modelId");
        s.downloads = std::max<int64_t>(0, int_field(m, "downloads"));
        s.likes = std::max<int64_t>(0, int_field(m, "likes"));
        s.last_modified = string_field(m, "lastModified");
        if (s.last_modified.empty()) s.last_modified = string_field(m, "createdAt");
        if (auto tags = m.find("tags"); tags != m.end() && tags->is_array())
            for (const json& t : *tags)
                if (t.is_string()) s.tags.push_back(t.get<std::string>());
        out.push_back(std::move(s));
    }
    return out;
}

std::string HubApi::resolve_url(const std::string& repo, const std::string& commit, const std::string& path) const {
    return m_config.endpoint + "/" + repo + "/resolve/" + url_quote(commit) + "/" + url_quote(path, "/");
}

void HubApi::throw_if_refused(const HttpReply& reply, const std::string& repo, const std::string& what) const {
    if (reply.cancelled) throw_expected(ErrorCode::cancelled, "cancelled");
    if (!reply.transport_error.empty())
        throw_expected(ErrorCode::io, "cannot reach the Hub at " + m_config.endpoint + " for " + what + ": " +
                                          reply.transport_error +
                                          " (check the network, a proxy in HTTPS_PROXY, or "
                                          "HF_ENDPOINT)");
    const long s = reply.status;
    if (s < 400) return;
    const std::string code = reply.header("x-error-code");
    const std::string page = m_config.endpoint + "/" + repo;
    if (code == "GatedRepo")
        throw_expected(ErrorCode::unauthorized,
                       repo + " is a gated repository (" + std::to_string(s) + "): " +
                           (m_config.token.empty() ? "log in at " + page +
                                                         ", accept its licence there, then create "
                                                         "a read token at " +
                                                         m_config.endpoint + "/settings/tokens and set HF_TOKEN to it"
                                                   : "accept its licence at " + page +
                                                         " with the account of the token in HF_TOKEN (access may "
                                                         "also await the authors' approval)"));
    if (code == "RepoNotFound" || (s == 401 && m_config.token.empty()))
        throw_expected(ErrorCode::not_found, repo + " was not found on the Hub (" + std::to_string(s) +
                                                 "): check the id at " + page +
                                                 "; a private or gated repository also needs HF_TOKEN set");
    if (code == "RevisionNotFound")
        throw_expected(ErrorCode::not_found, "the Hub has no revision of " + repo + " for " + what +
                                                 ": check --revision (a branch, tag or commit)");
    if (code == "EntryNotFound" || s == 404) throw_expected(ErrorCode::not_found, "the Hub has no " + what + " (404)");
    if (s == 401)
        throw_expected(ErrorCode::unauthorized, "the Hub refused the token in HF_TOKEN (401): create a new one at " +
                                                    m_config.endpoint + "/settings/tokens");
    if (s == 403)
        throw_expected(ErrorCode::unauthorized, "the Hub refused access to " + what +
                                                    " (403): the token in HF_TOKEN "
                                                    "lacks read access to " +
                                                    repo);
    if (s == 429) throw_expected(ErrorCode::capacity, "the Hub is rate-limiting requests (429): wait and pull again");
    throw_expected(ErrorCode::io, "the Hub answered " + std::to_string(s) + " for " + what + "; try again later");
}

ModelInfo HubApi::model_info(HttpSession& http, const HubId& id) const {
    HttpRequest r;
    r.url =
        m_config.endpoint + "/api/models/" + id.repo + "/revision/" + url_quote(id.revision_or_main()) + "?blobs=true";
    r.headers = m_config.auth_headers();
    const HttpReply reply = http.fetch(r);
    throw_if_refused(reply, id.repo, "revision '" + id.revision_or_main() + "' of " + id.repo);
    return parse_model_info(reply.body);
}

FileMetadata HubApi::file_metadata(HttpSession& http, const std::string& repo, const std::string& commit,
                                   const std::string& path) const {
    HttpRequest r;
    r.url = resolve_url(repo, commit, path);
    r.head = true;
    r.follow_redirects = false;  // the first answer carries X-Linked-Etag; the redirect target is the file host
    r.headers = m_config.auth_headers();
    HttpReply reply = http.fetch(r);
    // A renamed repository answers with a relative redirect to its new resolve URL (huggingface_hub follows those).
    for (int hop = 0;
         hop < 5 && reply.status >= 300 && reply.status < 400 && reply.header("location").rfind("/", 0) == 0; ++hop) {
        r.url = m_config.endpoint + reply.header("location");
        reply = http.fetch(r);
    }
    throw_if_refused(reply, repo, "'" + path + "' of " + repo);
    FileMetadata m;
    m.commit = reply.header("x-repo-commit");
    m.etag = normalize_etag(reply.header("x-linked-etag"));
    if (m.etag.empty()) m.etag = normalize_etag(reply.header("etag"));
    m.size = to_int64(reply.header("x-linked-size"));
    if (m.size < 0) m.size = to_int64(reply.header("content-length"));
    m.location = reply.status >= 300 && reply.status < 400 ? reply.header("location") : r.url;
    if (m.location.rfind("/", 0) == 0) m.location = m_config.endpoint + m.location;  // relative to the Hub
    if (m.location.empty())
        throw_expected(ErrorCode::io, "the Hub redirected '" + path + "' of " + repo + " without a Location header");
    return m;
}

std::vector<HubModelSummary> HubApi::search_adapters(HttpSession& http, const std::string& base, int limit) const {
    HttpRequest r;
    r.url = m_config.endpoint + "/api/models?filter=" + url_quote("base_model:adapter:" + base) +
            "&sort=downloads&direction=-1&limit=" + std::to_string(limit);
    r.headers = m_config.auth_headers();
    const HttpReply reply = http.fetch(r);
    throw_if_refused(reply, base, "the adapters of " + base);
    return parse_model_list(reply.body);
}

std::vector<HubModelSummary> HubApi::search_models(HttpSession& http, const std::string& text, int limit) const {
    HttpRequest r;
    r.url = m_config.endpoint + "/api/models?search=" + url_quote(text) +
            "&sort=downloads&direction=-1&limit=" + std::to_string(limit);
    r.headers = m_config.auth_headers();
    const HttpReply reply = http.fetch(r);
    throw_if_refused(reply, text, "a search for '" + text + "'");
    return parse_model_list(reply.body);
}

}  // namespace loradesk::hub
