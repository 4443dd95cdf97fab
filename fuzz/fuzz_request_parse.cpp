// libFuzzer target: request bodies as the router reads them (engine/server/json_fields parse_json_body, then
// request_parse for /v1/chat/completions and /v1/completions, with sampling_parse inside). The contract under
// test: any body yields a ParsedGeneration within the server's limits or an ApiError (a 4xx); anything else
// escaping would be a 500 and is a finding.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_check.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/request_parse.h"

namespace {

using namespace loradesk;
using namespace loradesk::server;

constexpr std::size_t kMaxInput = 65536;

const ServerOptions& options() {
    static const ServerOptions o = [] {
        ServerOptions s;
        // lora_path is resolved against the roots (canonicalised, read-only); an empty temporary root keeps
        // that path live without letting it find anything.
        auto root = std::filesystem::temp_directory_path() / ("loradesk-fuzz-root-" + std::to_string(getpid()));
        std::filesystem::create_directories(root);
        s.adapter_roots = {root.string()};
        s.max_prompt_bytes = 4096 * kPromptBytesPerToken;
        return s;
    }();
    return o;
}

void check(const ParsedGeneration& p, const ServerOptions& o) {
    FUZZ_CHECK(!p.prompts.empty());
    FUZZ_CHECK(p.n >= 1 && p.n <= o.max_n);
    FUZZ_CHECK(p.n_choices() >= 1 && p.n_choices() <= o.max_n);
    FUZZ_CHECK(p.echo_texts.empty() || p.echo_texts.size() == p.prompts.size());
    FUZZ_CHECK(p.top_logprobs >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size > kMaxInput) return -1;
    const ServerOptions& o = options();
    const std::string body(reinterpret_cast<const char*>(data), size);
    nlohmann::json j;
    try {
        j = parse_json_body(body);
    } catch (const ApiError& e) {
        FUZZ_CHECK(e.status == 400 || e.status == 413);
        return 0;
    }
    // One body through both endpoints: a chat body is a completions body with the wrong fields and vice versa.
    for (bool chat : {true, false}) {
        try {
            ParsedGeneration p = chat ? parse_chat_request(j, o) : parse_completion_request(j, o);
            check(p, o);
        } catch (const ApiError& e) {
            FUZZ_CHECK(e.status >= 400 && e.status < 500);
        }
    }
    return 0;
}
