// The scripted engine's two fixtures: the server tests' tiny base model and the desktop pages' busy workstation.
#include "scripted_engine.h"

namespace loradesk::testing {

namespace {

api::Tier tier_named(const std::string& name) {
    for (api::Tier t : {api::Tier::base, api::Tier::gpu, api::Tier::cpu, api::Tier::disk})
        if (api::tier_name(t) == name) return t;
    return api::Tier::disk;
}

}  // namespace

api::AdapterInfo make_adapter(const std::string& name, const std::string& base, int rank, const std::string& tier,
                              bool pinned, uint64_t requests) {
    api::AdapterInfo a;
    a.name = name;
    a.digest = "sha256:" + std::string(64 - name.size(), '0') + name;
    a.path = "/adapters/" + name;
    a.base_model = base;
    a.rank = rank;
    a.alpha = float(rank * 2);
    a.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    a.size_bytes = std::size_t(rank) * 1024 * 1024;
    a.tier = tier_named(tier);
    a.pinned = pinned;
    a.requests_total = requests;
    a.generated_tokens_total = requests * 40;
    a.prompt_tokens_total = requests * 100;
    a.cached_tokens_total = requests * 30;
    a.last_used_unix = requests ? 1795000000 : 0;
    a.created_unix = 1794000000;
    return a;
}

std::string echo_reply(const std::string& adapter, const std::string& user_text) {
    return (adapter.empty() ? std::string("base") : adapter) + " says: " + user_text;
}

ScriptedFixture tiny_base_fixture() {
    ScriptedFixture f;
    f.model.id = "tiny-base";
    f.model.path = "/models/tiny-base";
    f.model.architecture = "Qwen3ForCausalLM";
    f.model.device = "NVIDIA H100 80GB HBM3";
    f.model.parameters = 6100000;
    f.model.weight_bytes = 12200000;  // 2 bytes per weight
    f.model.kv_bytes = 4000000;
    f.model.vocab_size = 151936;
    f.model.max_context = 4096;

    api::AdapterInfo sql;
    sql.name = "sql-lora";
    sql.aliases = {"sql"};
    sql.digest = std::string(64, 'a');
    sql.path = "/adapters/sql-lora";
    sql.base_model = "tiny-base";
    sql.rank = 16;
    sql.alpha = 32;
    sql.targets = {"q_proj", "v_proj"};
    sql.size_bytes = 1 << 20;
    sql.tier = api::Tier::gpu;
    sql.last_load_ms = 12.5;
    sql.created_unix = 1700000000;
    api::AdapterInfo chat = sql;
    chat.name = "chat-lora";
    chat.aliases = {};
    chat.digest = std::string(64, 'b');
    chat.path = "/adapters/chat-lora";
    chat.rank = 8;
    chat.tier = api::Tier::disk;
    api::AdapterInfo dora = chat;
    dora.name = "dora-lora";
    dora.digest = std::string(64, 'c');
    dora.compatible = false;
    dora.incompatibility = "uses DoRA, which loradesk cannot apply exactly";
    f.adapters = {sql, chat, dora};

    f.stats.kv_pages_total = 100;
    f.stats.kv_pages_free = 75;
    f.stats.gpu_slots_used = 1;
    return f;
}

ScriptedFixture desktop_fixture() {
    constexpr const char* kBase = "Qwen/Qwen3-0.6B";
    ScriptedFixture f;
    f.model.id = "Qwen3-0.6B";
    f.model.path = "/models/Qwen3-0.6B";
    f.model.architecture = "Qwen3ForCausalLM";
    f.model.device = "cpu";
    f.model.parameters = 596000000;
    f.model.max_context = 4096;
    f.model.vocab_size = 151936;
    f.model.weight_bytes = std::size_t(1192) << 20;
    f.model.kv_bytes = std::size_t(512) << 20;
    f.model.lora_slot_bytes = std::size_t(64) << 20;
    f.model.kv_pages_total = 1000;
    f.model.page_size = 16;
    f.model.max_loras = 4;
    f.model.max_lora_rank = 64;

    f.adapters = {make_adapter("de", kBase, 8, "gpu", true, 120), make_adapter("es", kBase, 16, "cpu", false, 40),
                  make_adapter("it", kBase, 8, "disk", false, 0), make_adapter("bofh", kBase, 32, "gpu", false, 7)};
    f.adapters[0].aliases = {"german"};
    api::AdapterInfo llama = make_adapter("llama-sql", "meta-llama/Llama-3.2-1B", 16, "disk", false, 0);
    llama.compatible = false;
    llama.incompatibility =
        "targets q_proj with in_features 2048 but the base model has 1024 (is it for another base model?)";
    f.adapters.push_back(llama);

    f.stats.running = 2;
    f.stats.waiting = 1;
    f.stats.kv_pages_total = 1000;
    f.stats.kv_pages_free = 600;
    f.stats.kv_pages_cached = 150;
    f.stats.prompt_tokens_total = 4000;
    f.stats.cached_tokens_total = 1000;
    f.stats.generated_tokens_total = 6000;
    f.stats.tokens_per_second = 42.5;
    f.stats.gpu_slots_used = 2;
    f.stats.cpu_adapters = 1;

    f.reply = ReplyStyle::echo;
    f.first_token_ms = 12.5;
    return f;
}

}  // namespace loradesk::testing
