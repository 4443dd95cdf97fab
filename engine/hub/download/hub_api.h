// The Hugging Face Hub's HTTP API as hub/download uses it: where it is (HF_ENDPOINT), who asks (HF_TOKEN),
// the model-info answer (`GET /api/models/{id}/revision/{rev}?blobs=true`), the per-file metadata of
// `HEAD /{id}/resolve/{commit}/{path}`, adapter search (`GET /api/models?filter=base_model:adapter:{id}`), free-text
// search (`GET /api/models?search=...`), and
// the messages for the Hub's refusals (gated, private, missing). Parsing is pure; requests go through an
// HttpSession. Thread-safe apart from the session passed in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/download/http_client.h"
#include "hub/hub_id.h"

namespace loradesk::hub {

struct HubConfig {
    std::string endpoint = "https://huggingface.co";  // no trailing slash
    std::string token;                                // empty = anonymous
    // $HF_ENDPOINT and the token from $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, $HF_TOKEN_PATH or $HF_HOME/token.
    static HubConfig from_environment();
    // "Authorization: Bearer ..." when there is a token.
    std::vector<std::string> auth_headers() const;
};

struct RepoFile {
    std::string path;     // "model-00001-of-00002.safetensors" (checked with repo_file_problem)
    int64_t size = -1;    // -1 when the listing did not say
    std::string blob_id;  // git blob sha1 (40 hex) when given
    std::string sha256;   // LFS files: the content's sha256 (64 hex); empty for plain git files
};

struct ModelInfo {
    std::string id;      // as the Hub spells it
    std::string commit;  // "sha": the revision's commit (40 hex)
    bool gated = false;
    std::vector<RepoFile> files;
};

// The model-info JSON. Throws ExpectedError(corrupt_file) naming the field when the answer is not one, and
// ExpectedError(invalid_argument) for a file name that would leave the snapshot folder.
ModelInfo parse_model_info(const std::string& json_text);

// What HEAD /{id}/resolve/{commit}/{path} says about a file (huggingface_hub's get_hf_file_metadata).
struct FileMetadata {
    std::string commit;    // X-Repo-Commit
    std::string etag;      // X-Linked-Etag, else ETag, without W/ and quotes: the blob's name
    int64_t size = -1;     // X-Linked-Size, else Content-Length
    std::string location;  // where to GET the bytes (the redirect target, else the resolve URL)
};

// An adapter listed by search: id, downloads, likes, and its size when the listing gives one.
struct HubModelSummary {
    std::string id;
    int64_t downloads = 0;
    int64_t likes = 0;
    std::string last_modified;
    std::vector<std::string> tags;
};
std::vector<HubModelSummary> parse_model_list(const std::string& json_text);

class HubApi {
  public:
    explicit HubApi(HubConfig config) : m_config(std::move(config)) {}
    const HubConfig& config() const { return m_config; }

    // Throws ExpectedError with what to do: not_found (repo or revision), unauthorized (gated, private), io.
    ModelInfo model_info(HttpSession& http, const HubId& id) const;
    FileMetadata file_metadata(HttpSession& http, const std::string& repo, const std::string& commit,
                               const std::string& path) const;
    // Models whose card says they are adapters of `base` (filter=base_model:adapter:<base>), most downloaded first.
    std::vector<HubModelSummary> search_adapters(HttpSession& http, const std::string& base, int limit) const;
    // Models whose id contains `text` (GET /api/models?search=<text>), most downloaded first.
    std::vector<HubModelSummary> search_models(HttpSession& http, const std::string& text, int limit) const;

    std::string resolve_url(const std::string& repo, const std::string& commit, const std::string& path) const;
    // The reason a reply is an error, as an ExpectedError to throw, or nothing for 2xx/3xx.
    void throw_if_refused(const HttpReply& reply, const std::string& repo, const std::string& what) const;

  private:
    HubConfig m_config;
};

}  // namespace loradesk::hub
