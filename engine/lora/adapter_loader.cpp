// PEFT adapter tensors: key parsing, fail-closed validation, digest and f32 conversion.
// Keys look like base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight (PEFT strips the
// adapter name on save); A is [r, in], B is [out, r].
#include "lora/adapter_loader.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <compare>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>

#include "core/error.h"
#include "core/sha256.h"

namespace loradesk::lora {
namespace fs = std::filesystem;
using runtime::LoraModule;

namespace {

constexpr std::string_view kPrefix = "base_model.model.";

struct ParsedKey {
    int layer = -1;
    LoraModule module = LoraModule::q;
    std::string path;
    bool is_a = true;
};

[[noreturn]] void fail(ErrorCode code, const std::string& adapter, const std::string& message) {
    throw_expected(code, "adapter '" + adapter + "': " + message);
}

bool parse_module_name(std::string_view group, std::string_view proj, LoraModule* out) {
    for (int m = 0; m < runtime::kNumLoraModules; ++m) {
        if (runtime::lora_module_name(LoraModule(m)) != proj) continue;
        bool attn = m <= int(LoraModule::o);
        if (group != (attn ? "self_attn" : "mlp")) return false;
        *out = LoraModule(m);
        return true;
    }
    return false;
}

// Explains why a tensor that is not a plain projection LoRA factor cannot be served.
[[noreturn]] void reject_key(const std::string& adapter, const std::string& name) {
    auto has = [&](std::string_view s) { return name.find(s) != std::string::npos; };
    if (has("lora_embedding_") || has("embed_tokens") || has("lm_head.lora_"))
        fail(ErrorCode::unsupported, adapter,
             "tensor '" + name +
                 "' is an embedding/lm_head LoRA, which is not supported "
                 "(only the attention and MLP projections)");
    if (has("lora_magnitude_vector"))
        fail(ErrorCode::unsupported, adapter,
             "tensor '" + name + "' is a DoRA magnitude vector; DoRA adapters are not supported");
    if (has(".lora_B.bias") || has(".lora_A.bias"))
        fail(ErrorCode::unsupported, adapter,
             "tensor '" + name + "' is a LoRA bias (lora_bias=true), which is not supported");
    if (!has("lora_"))
        fail(ErrorCode::unsupported, adapter,
             "tensor '" + name +
                 "' is a full module copy (modules_to_save), which is not "
                 "supported");
    fail(ErrorCode::unsupported, adapter,
         "tensor '" + name +
             "' is not a LoRA factor of an attention or MLP projection "
             "(expected base_model.model.model.layers.N.{self_attn,mlp}.<proj>.lora_{A,B}.weight)");
}

ParsedKey parse_key(const std::string& adapter, const std::string& name) {
    ParsedKey k;
    std::string_view s = name;
    if (s.substr(0, kPrefix.size()) != kPrefix) reject_key(adapter, name);
    s.remove_prefix(kPrefix.size());
    constexpr std::string_view kA = ".lora_A.weight", kB = ".lora_B.weight";
    if (s.size() > kA.size() && s.substr(s.size() - kA.size()) == kA) {
        k.is_a = true;
    } else if (s.size() > kB.size() && s.substr(s.size() - kB.size()) == kB) {
        k.is_a = false;
    } else {
        reject_key(adapter, name);
    }
    s.remove_suffix(kA.size());
    k.path = std::string(s);
    // model.layers.<N>.<group>.<proj>
    constexpr std::string_view kLayers = "model.layers.";
    if (s.substr(0, kLayers.size()) != kLayers) reject_key(adapter, name);
    s.remove_prefix(kLayers.size());
    std::size_t dot = s.find('.');
    if (dot == 0 || dot == std::string_view::npos || dot > 6) reject_key(adapter, name);
    int layer = 0;
    for (char c : s.substr(0, dot)) {
        if (c < '0' || c > '9') reject_key(adapter, name);
        layer = layer * 10 + (c - '0');
    }
    s.remove_prefix(dot + 1);
    std::size_t dot2 = s.find('.');
    if (dot2 == std::string_view::npos || !parse_module_name(s.substr(0, dot2), s.substr(dot2 + 1), &k.module))
        reject_key(adapter, name);
    k.layer = layer;
    return k;
}

std::string shape_of(const model::TensorView& t) { return t.shape_string(); }

void check_factor(const std::string& adapter, const model::TensorView& t) {
    if (t.shape.size() != 2)
        fail(ErrorCode::corrupt_file, adapter,
             "tensor '" + t.name + "' has shape " + shape_of(t) + "; LoRA factors are 2-D");
    if (!is_float_dtype(t.dtype))
        fail(ErrorCode::unsupported, adapter,
             "tensor '" + t.name + "' has dtype " + std::string(dtype_name(t.dtype)) +
                 "; LoRA factors must be F32, F16 or BF16");
}

void check_against_base(const std::string& adapter, const AdapterModule& m, const model::ModelConfig& base) {
    std::string proj(runtime::lora_module_name(m.module));
    if (m.layer >= base.n_layers)
        fail(ErrorCode::invalid_argument, adapter,
             "tensor '" + m.a->name + "' is for layer " + std::to_string(m.layer) + " but the base model has " +
                 std::to_string(base.n_layers) + " layers (is it for another base model?)");
    int in = lora_in_features(base, m.module), out = lora_out_features(base, m.module);
    if (m.a->shape[1] != in)
        fail(ErrorCode::invalid_argument, adapter,
             "targets " + proj + " with in_features " + std::to_string(m.a->shape[1]) + " but the base model has " +
                 std::to_string(in) + " (is it for another base model?)");
    if (m.b->shape[0] != out)
        fail(ErrorCode::invalid_argument, adapter,
             "targets " + proj + " with out_features " + std::to_string(m.b->shape[0]) + " but the base model has " +
                 std::to_string(out) + " (is it for another base model?)");
}

// Pairs A with B, checks ranks against each other, the config and the limit, and resolves the scale.
AdapterModule make_module(const std::string& adapter, const AdapterConfig& cfg, const ParsedKey& key,
                          const model::TensorView* a, const model::TensorView* b, int max_rank) {
    if (!a) fail(ErrorCode::corrupt_file, adapter, "tensor '" + b->name + "' has no matching lora_A tensor");
    if (!b) fail(ErrorCode::corrupt_file, adapter, "tensor '" + a->name + "' has no matching lora_B tensor");
    check_factor(adapter, *a);
    check_factor(adapter, *b);
    AdapterModule m{key.layer, key.module, key.path, int(a->shape[0]), 0.0f, a, b};
    if (b->shape[1] != a->shape[0])
        fail(ErrorCode::corrupt_file, adapter,
             "rank mismatch in " + key.path + ": lora_A is " + shape_of(*a) + " but lora_B is " + shape_of(*b) +
                 " (A [r, in], B [out, r])");
    if (m.rank <= 0) fail(ErrorCode::corrupt_file, adapter, "module " + key.path + " has rank 0");
    if (!cfg.targets(key.path))
        fail(ErrorCode::corrupt_file, adapter,
             "tensor '" + a->name + "' is for " + key.path +
                 ", which adapter_config.json does not target (target_modules, "
                 "exclude_modules or layers_to_transform disagree with the tensors)");
    if (int want = cfg.rank_for(key.path); want != m.rank)
        fail(ErrorCode::corrupt_file, adapter,
             "module " + key.path + " has rank " + std::to_string(m.rank) + " but adapter_config.json says " +
                 std::to_string(want) + " (r / rank_pattern disagree with the tensors)");
    if (max_rank > 0 && m.rank > max_rank)
        fail(ErrorCode::unsupported, adapter,
             "rank " + std::to_string(m.rank) + " of " + key.path + " exceeds --max-lora-rank " +
                 std::to_string(max_rank) + "; restart with --max-lora-rank " + std::to_string(m.rank) + " or more");
    m.scale = cfg.scale_for(key.path);
    return m;
}

}  // namespace

int lora_in_features(const model::ModelConfig& base, LoraModule m) {
    switch (m) {
        case LoraModule::o:
            return base.q_dim();
        case LoraModule::down:
            return base.intermediate_size;
        default:
            return base.hidden_size;
    }
}

int lora_out_features(const model::ModelConfig& base, LoraModule m) {
    switch (m) {
        case LoraModule::q:
            return base.q_dim();
        case LoraModule::k:
        case LoraModule::v:
            return base.kv_dim();
        case LoraModule::gate:
        case LoraModule::up:
            return base.intermediate_size;
        default:
            return base.hidden_size;
    }
}

AdapterPlan plan_adapter(const std::string& dir, const model::ModelConfig* base, int max_rank) {
    AdapterPlan plan;
    plan.dir = dir;
    plan.name = fs::path(dir).lexically_normal().filename().string();
    if (plan.name.empty()) plan.name = fs::path(dir).lexically_normal().parent_path().filename().string();
    if (!fs::is_directory(dir)) throw_expected(ErrorCode::not_found, "adapter folder '" + dir + "' does not exist");
    plan.config = load_adapter_config(dir);
    fs::path st = fs::path(dir) / "adapter_model.safetensors";
    if (!fs::exists(st)) {
        if (fs::exists(fs::path(dir) / "adapter_model.bin"))
            fail(ErrorCode::unsupported, plan.name,
                 "only adapter_model.bin (a Python pickle) is present, which cannot be read safely; convert it with "
                 "python -c \"import torch; from safetensors.torch import save_file; "
                 "save_file(torch.load('adapter_model.bin'), 'adapter_model.safetensors')\" in that folder");
        throw_expected(ErrorCode::not_found,
                       "adapter '" + plan.name + "': no adapter_model.safetensors in '" + dir + "'");
    }
    // Copied, not mapped: users rewrite adapter files in place while the server runs, and a mapped file that
    // shrinks turns the next read into SIGBUS.
    plan.file = std::make_unique<model::SafetensorsFile>(st.string(), FileRead::copy);
    std::map<std::pair<int, int>, std::pair<const model::TensorView*, const model::TensorView*>> pairs;
    std::map<std::pair<int, int>, ParsedKey> keys;
    for (auto& t : plan.file->tensors()) {
        ParsedKey k = parse_key(plan.name, t.name);
        auto id = std::make_pair(k.layer, int(k.module));
        auto& slot = pairs[id];
        (k.is_a ? slot.first : slot.second) = &t;
        keys[id] = k;
    }
    if (pairs.empty()) fail(ErrorCode::corrupt_file, plan.name, "adapter_model.safetensors contains no LoRA tensors");
    for (auto& [id, ab] : pairs) {
        plan.modules.push_back(make_module(plan.name, plan.config, keys[id], ab.first, ab.second, max_rank));
        if (base) check_against_base(plan.name, plan.modules.back(), *base);
    }
    return plan;
}

namespace {
std::atomic<uint64_t> g_digests_computed{0};
}  // namespace

uint64_t adapter_digests_computed() { return g_digests_computed.load(std::memory_order_relaxed); }

std::string adapter_digest(const AdapterPlan& plan) {
    g_digests_computed.fetch_add(1, std::memory_order_relaxed);
    Sha256 h;
    h.update(std::string_view("loradesk-lora-digest-v1\n"));
    std::vector<const AdapterModule*> mods;
    for (auto& m : plan.modules) mods.push_back(&m);
    std::sort(mods.begin(), mods.end(), [](auto* x, auto* y) { return x->path < y->path; });
    char buf[128];
    for (auto* m : mods) {
        std::snprintf(buf, sizeof buf, " rank %d scale %a\n", m->rank, double(m->scale));
        h.update(m->path);
        h.update(std::string_view(buf));
    }
    for (auto& t : plan.file->tensors()) {  // already sorted by name
        h.update(t.name);
        h.update(std::string_view(" "));
        h.update(dtype_name(t.dtype));
        h.update(t.shape_string());
        uint64_t n = t.nbytes;
        std::snprintf(buf, sizeof buf, " %" PRIu64 "\n", n);
        h.update(std::string_view(buf));
        h.update(t.data, t.nbytes);
    }
    return h.finish_hex();
}

namespace {

// A random-access iterator that reads source elements of type `Src` (unaligned, via memcpy) and yields
// them as f32. Handing it to vector::assign makes the vector allocate exactly n floats and construct
// each one from the file: the destination is written once. resize() + convert would zero-fill the
// fresh buffer first, a second full pass over 175 MB at Qwen3-8B shapes.
template <class Src, float (*kConvert)(Src)>
class F32ReadIter {
  public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = float;
    using difference_type = std::ptrdiff_t;
    using pointer = const float*;
    using reference = float;

    F32ReadIter() = default;
    explicit F32ReadIter(const uint8_t* p) : m_p(p) {}
    float operator*() const {
        Src v;
        std::memcpy(&v, m_p, sizeof v);
        return kConvert(v);
    }
    float operator[](difference_type i) const { return *(*this + i); }
    F32ReadIter& operator++() {
        m_p += sizeof(Src);
        return *this;
    }
    F32ReadIter operator++(int) {
        F32ReadIter t = *this;
        ++*this;
        return t;
    }
    F32ReadIter& operator--() {
        m_p -= sizeof(Src);
        return *this;
    }
    F32ReadIter operator--(int) {
        F32ReadIter t = *this;
        --*this;
        return t;
    }
    F32ReadIter& operator+=(difference_type n) {
        m_p += n * difference_type(sizeof(Src));
        return *this;
    }
    F32ReadIter& operator-=(difference_type n) { return *this += -n; }
    friend F32ReadIter operator+(F32ReadIter it, difference_type n) { return it += n; }
    friend F32ReadIter operator+(difference_type n, F32ReadIter it) { return it += n; }
    friend F32ReadIter operator-(F32ReadIter it, difference_type n) { return it -= n; }
    friend difference_type operator-(F32ReadIter x, F32ReadIter y) {
        return (x.m_p - y.m_p) / difference_type(sizeof(Src));
    }
    friend auto operator<=>(F32ReadIter x, F32ReadIter y) = default;

  private:
    const uint8_t* m_p = nullptr;
};

float f32_identity(float v) { return v; }

template <class Src, float (*kConvert)(Src)>
void assign_as(std::vector<float>& dst, const uint8_t* src, std::size_t n) {
    F32ReadIter<Src, kConvert> first(src);
    dst.assign(first, first + std::ptrdiff_t(n));
}

// dst = the tensor's elements as f32, allocated to size and written in one pass (no zero fill).
void assign_f32(std::vector<float>& dst, const model::TensorView& t) {
    const auto n = std::size_t(t.numel());
    switch (t.dtype) {
        case DType::bf16:
            return assign_as<uint16_t, bf16_to_f32>(dst, t.data, n);
        case DType::f16:
            return assign_as<uint16_t, f16_to_f32>(dst, t.data, n);
        case DType::f32:
            return assign_as<float, f32_identity>(dst, t.data, n);
        default:  // plan_adapter admits float dtypes only; keep the general path for anything else
            dst.resize(n);
            convert_to_f32(t.data, t.dtype, n, dst.data());
    }
}

}  // namespace

runtime::LoraWeights convert_adapter(const AdapterPlan& plan, int n_layers, ThreadPool* pool,
                                     runtime::LoraWeights* reuse) {
    for (auto& m : plan.modules)
        if (m.layer >= n_layers)
            fail(ErrorCode::invalid_argument, plan.name,
                 "module " + m.path + " is beyond the base model's " + std::to_string(n_layers) +
                     " layers (is it for another base model?)");
    runtime::LoraWeights w;
    if (reuse) {
        w = std::move(*reuse);
        w.layers.resize(std::size_t(n_layers));
        // Modules the plan lacks must not keep the previous adapter's weights; the others keep their
        // buffers, which assign_f32 overwrites in place.
        std::vector<std::array<bool, runtime::kNumLoraModules>> used(static_cast<std::size_t>(n_layers));  // all false
        for (auto& m : plan.modules) used[std::size_t(m.layer)][int(m.module)] = true;
        for (std::size_t l = 0; l < w.layers.size(); ++l)
            for (int mi = 0; mi < runtime::kNumLoraModules; ++mi)
                if (!used[l][mi]) w.layers[l][mi] = runtime::LoraModuleWeights{};
    }
    w.layers.resize(std::size_t(n_layers));
    auto convert = [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const AdapterModule& m = plan.modules[i];
            auto& dst = w.layers[std::size_t(m.layer)][int(m.module)];  // distinct per module: no sharing
            dst.rank = m.rank;
            dst.scale = m.scale;
            // PEFT's forward is y += scale * lora_B(lora_A(x)) whatever fan_in_fan_out says for nn.Linear
            // bases (PEFT resets the flag for them), so A and B are used as stored.
            assign_f32(dst.a, *m.a);
            assign_f32(dst.b, *m.b);
            // NaN or Inf would turn every token of the adapter's requests into garbage (logprob null):
            // refuse the adapter here, where the tensor can be named.
            for (const auto* t : {m.a, m.b}) {
                const std::vector<float>& v = t == m.a ? dst.a : dst.b;
                auto bad = std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
                if (bad != v.end())
                    fail(ErrorCode::corrupt_file, plan.name,
                         "tensor '" + t->name + "' holds " + (std::isnan(*bad) ? "NaN" : "infinite") +
                             " values at element " + std::to_string(bad - v.begin()) +
                             " (a diverged training run or a damaged file); retrain or re-export the adapter");
            }
        }
    };
    if (pool)
        pool->parallel_for(plan.modules.size(), convert);
    else
        convert(0, plan.modules.size());
    return w;
}

runtime::LoraWeights load_adapter(const std::string& dir, const model::ModelConfig& base, int max_rank,
                                  ThreadPool* pool, runtime::LoraWeights* reuse) {
    AdapterPlan plan = plan_adapter(dir, &base, max_rank);
    return convert_adapter(plan, base.n_layers, pool, reuse);
}

}  // namespace loradesk::lora
