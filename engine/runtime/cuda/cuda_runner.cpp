// CudaRunner setup: device checks, weight upload (bf16, fused QKV and gate/up matrices; quantized
// projections are dequantized to bf16 on the host for now), the KV pool.
// LoRA slots are in cuda_runner_lora.cpp, the forward pass in cuda_forward.cpp.
#include "runtime/cuda/cuda_runner.h"

#include <fmt/format.h>

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "launchers.h"
#include "model/dequantize.h"
#include "model/model_weights.h"
#include "ref/ref_kernels.h"
#include "runtime/cuda/cuda_runner_impl.h"

namespace loradesk::runtime::cuda {

void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw_error(ErrorCode::internal, fmt::format("{} failed: {}", what, cudaGetErrorString(e)));
}

void cublas_check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw_error(ErrorCode::internal, fmt::format("{} failed: cuBLAS status {}", what, int(s)));
}

bool cuda_device_available() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

DeviceArena::~DeviceArena() { release(); }

void DeviceArena::release() {
    if (m_ptr) cudaFree(m_ptr);
    m_ptr = nullptr;
    m_bytes = 0;
}

void DeviceArena::allocate(std::size_t bytes, const char* what) {
    release();
    if (bytes == 0) return;
    std::size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (bytes > free_b || cudaMalloc(reinterpret_cast<void**>(&m_ptr), bytes) != cudaSuccess) {
        cudaGetLastError();
        m_ptr = nullptr;
        throw_expected(ErrorCode::unavailable,
                       fmt::format("{} needs {:.2f} GiB of GPU memory but only {:.2f} GiB of {:.2f} GiB is free "
                                   "(lower --kv-memory / --max-loras / --max-lora-rank, or use --device cpu)",
                                   what, bytes / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0));
    }
    m_bytes = bytes;
}

PinnedBuffer::~PinnedBuffer() {
    if (m_ptr) cudaFreeHost(m_ptr);
}

void PinnedBuffer::reserve(std::size_t bytes) {
    if (bytes <= m_bytes) return;
    if (m_ptr) cudaFreeHost(m_ptr), m_ptr = nullptr;
    cuda_check(cudaMallocHost(reinterpret_cast<void**>(&m_ptr), bytes), "cudaMallocHost");
    m_bytes = bytes;
}

namespace {

std::size_t align_up(std::size_t v) { return (v + 255) & ~std::size_t(255); }

// One part of an uploaded matrix: a float tensor, or a quantized projection (its dense pointer is null).
struct UploadPart {
    UploadPart(const model::TensorView* t) : dense(t) {}  // NOLINT(google-explicit-constructor): list brevity
    UploadPart(const model::TensorView* t, const model::QuantizedLinear* q) : dense(t), quant(q) {}
    std::size_t numel() const {
        return quant ? std::size_t(quant->out_features * quant->in_features) : std::size_t(dense->numel());
    }
    const model::TensorView* dense = nullptr;
    const model::QuantizedLinear* quant = nullptr;
};

// Appends a part as bf16 to host staging. Quantized projections are dequantized (f32, then rounded to bf16)
// until the quantized GEMV/GEMM kernels exist: correct, but no memory saving on the device yet.
void append_bf16(const UploadPart& p, std::vector<uint16_t>& out) {
    if (p.quant) {
        const std::vector<float> f = model::dequantize(*p.quant);
        const std::size_t at = out.size();
        out.resize(at + f.size());
        for (std::size_t i = 0; i < f.size(); ++i) out[at + i] = f32_to_bf16(f[i]);
        return;
    }
    const model::TensorView* t = p.dense;
    std::size_t n = std::size_t(t->numel()), at = out.size();
    out.resize(at + n);
    if (t->dtype == DType::bf16) {
        std::memcpy(out.data() + at, t->data, n * 2);
        return;
    }
    std::vector<float> f = t->to_f32();
    for (std::size_t i = 0; i < n; ++i) out[at + i] = f32_to_bf16(f[i]);
}

}  // namespace

std::pair<int, int> CudaRunner::Impl::module_dims(int m) const {
    switch (LoraModule(m)) {
        case LoraModule::q:
            return {cfg.hidden_size, cfg.q_dim()};
        case LoraModule::k:
        case LoraModule::v:
            return {cfg.hidden_size, cfg.kv_dim()};
        case LoraModule::o:
            return {cfg.q_dim(), cfg.hidden_size};
        case LoraModule::gate:
        case LoraModule::up:
            return {cfg.hidden_size, cfg.intermediate_size};
        case LoraModule::down:
            return {cfg.intermediate_size, cfg.hidden_size};
    }
    return {0, 0};
}

// Plans every tensor's place in one arena, converts on the host and copies, one tensor group at a time.
void CudaRunner::Impl::upload_weights(const std::string& model_dir) {
    model::ModelWeights w(model_dir);
    cfg = w.config();
    if (cfg.head_dim % 2 != 0 || cfg.head_dim > 256)
        throw_expected(ErrorCode::unsupported,
                       fmt::format("the CUDA runner supports head_dim up to 256 (even); this model has {} "
                                   "(use --device cpu)",
                                   cfg.head_dim));
    struct Item {
        std::vector<UploadPart> parts;
        const uint16_t** dst;
    };
    std::vector<Item> items;
    layers.assign(std::size_t(cfg.n_layers), {});
    items.push_back({{&w.embed()}, &embed});
    items.push_back({{&w.final_norm()}, &final_norm});
    if (!cfg.tie_word_embeddings) items.push_back({{&w.lm_head()}, &lm_head});
    for (int l = 0; l < cfg.n_layers; ++l) {
        const auto& s = w.layer(l);
        DeviceLayer& d = layers[std::size_t(l)];
        items.push_back({{s.input_norm}, &d.in_norm});
        items.push_back({{s.post_norm}, &d.post_norm});
        items.push_back({{{s.q, s.quant.q}, {s.k, s.quant.k}, {s.v, s.quant.v}}, &d.wqkv});
        items.push_back({{{s.o, s.quant.o}}, &d.wo});
        items.push_back({{{s.gate, s.quant.gate}, {s.up, s.quant.up}}, &d.wgu});
        items.push_back({{{s.down, s.quant.down}}, &d.wd});
        if (s.q_norm) items.push_back({{s.q_norm}, &d.q_norm});
        if (s.k_norm) items.push_back({{s.k_norm}, &d.k_norm});
        if (s.q_bias) items.push_back({{s.q_bias, s.k_bias, s.v_bias}, &d.bqkv});
        if (s.o_bias) items.push_back({{s.o_bias}, &d.bo});
        if (s.gate_bias) items.push_back({{s.gate_bias, s.up_bias}, &d.bgu});
        if (s.down_bias) items.push_back({{s.down_bias}, &d.bd});
    }
    if (w.quantized())
        log::info(
            "{} weights ({:.2f} GiB packed): dequantized to bf16 on upload; quantized GPU kernels are not "
            "implemented yet, so they take bf16 memory",
            model::quant_description(cfg.quant), w.quantized_bytes() / 1073741824.0);
    std::vector<std::size_t> offsets;
    std::size_t total = 0;
    for (const auto& it : items) {
        offsets.push_back(total);
        std::size_t n = 0;
        for (const auto& p : it.parts) n += p.numel();
        total += align_up(n * 2);
    }
    const std::size_t freq_offset = total;
    total += align_up(std::size_t(cfg.head_dim / 2) * sizeof(float));
    weights.allocate(total, "the model weights");
    std::vector<uint16_t> host;
    for (std::size_t i = 0; i < items.size(); ++i) {
        host.clear();
        for (const auto& p : items[i].parts) append_bf16(p, host);
        cuda_check(cudaMemcpy(weights.data() + offsets[i], host.data(), host.size() * 2, cudaMemcpyHostToDevice),
                   "weight upload");
        *items[i].dst = reinterpret_cast<const uint16_t*>(weights.data() + offsets[i]);
    }
    if (cfg.tie_word_embeddings) lm_head = embed;
    kernels::ref::RopeScalingSpec rs;
    rs.kind = cfg.rope_scaling.type == model::RopeType::linear   ? kernels::RopeKind::linear
              : cfg.rope_scaling.type == model::RopeType::llama3 ? kernels::RopeKind::llama3
                                                                 : kernels::RopeKind::default_;
    rs.factor = cfg.rope_scaling.factor;
    rs.low_freq_factor = cfg.rope_scaling.low_freq_factor;
    rs.high_freq_factor = cfg.rope_scaling.high_freq_factor;
    rs.original_max_position_embeddings = cfg.rope_scaling.original_max_position_embeddings;
    auto freq = kernels::ref::rope_inv_freq(cfg.head_dim, cfg.rope_theta, rs);
    inv_freq = reinterpret_cast<float*>(weights.data() + freq_offset);
    cuda_check(cudaMemcpy(inv_freq, freq.data(), freq.size() * sizeof(float), cudaMemcpyHostToDevice),
               "rope table upload");
}

CudaRunner::CudaRunner(const std::string& model_dir, int device, CudaRunnerOptions options)
    : m(std::make_unique<Impl>()) {
    m->opts = options;
    kernels::set_programmatic_dependent_launch(options.programmatic_launch);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        throw_expected(ErrorCode::unavailable,
                       fmt::format("no usable CUDA GPU ({}); install the NVIDIA driver or use --device cpu",
                                   e != cudaSuccess ? cudaGetErrorString(e) : "no devices"));
    if (device < 0 || device >= n)
        throw_expected(ErrorCode::invalid_argument, fmt::format("CUDA device {} does not exist (found {})", device, n));
    m->device = device;
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    m->name = prop.name;
    m->n_sms = prop.multiProcessorCount;
    cuda_check(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaStreamCreateWithFlags(&m->lora_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaEventCreateWithFlags(&m->staging_free, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&m->compute_mark, cudaEventDisableTiming), "cudaEventCreate");
    cublas_check(cublasCreate(&m->cublas), "cublasCreate");
    cublas_check(cublasSetStream(m->cublas, m->stream), "cublasSetStream");
    m->upload_weights(model_dir);
    m->slot_loaded.assign(1, false);
    m->plan_workspace();
    log::info("CUDA runner on {}: {:.2f} GiB of bf16 weights", m->name, m->weights.bytes() / 1073741824.0);
}

CudaRunner::~CudaRunner() {
    if (!m) return;
    if (m->stream) cudaStreamSynchronize(m->stream);
    m->drop_graphs();
    if (m->lora_stream) cudaStreamSynchronize(m->lora_stream);
    if (m->cublas) cublasDestroy(m->cublas);
    m->slot_source.clear();  // their pinned buffers go back to the pool, freed with it
    for (cudaEvent_t e : m->slot_ready)
        if (e) cudaEventDestroy(e);
    if (m->staging_free) cudaEventDestroy(m->staging_free);
    if (m->compute_mark) cudaEventDestroy(m->compute_mark);
    if (m->stream) cudaStreamDestroy(m->stream);
    if (m->lora_stream) cudaStreamDestroy(m->lora_stream);
}

const model::ModelConfig& CudaRunner::config() const { return m->cfg; }
std::string CudaRunner::device_name() const { return m->name; }

MemoryReport CudaRunner::memory() const {
    MemoryReport r;
    r.weight_bytes = m->weights.bytes();
    r.kv_bytes = m->kv.bytes();
    r.lora_slot_bytes = m->lora.bytes();
    r.workspace_bytes = m->workspace.bytes() + m->meta_arena.bytes();
    return r;
}

std::optional<DeviceMemory> CudaRunner::device_memory() const {
    cuda_check(cudaSetDevice(m->device), "cudaSetDevice");
    DeviceMemory d;
    cuda_check(cudaMemGetInfo(&d.free, &d.total), "cudaMemGetInfo");
    return d;
}

std::size_t CudaRunner::kv_page_bytes(int page_size) const {
    return std::size_t(m->cfg.n_layers) * 2 * std::size_t(page_size) * std::size_t(m->cfg.kv_dim()) * 2;
}

void CudaRunner::allocate_kv(int n_pages, int page_size) {
    if (n_pages <= 0 || page_size <= 0)
        throw_expected(ErrorCode::invalid_argument,
                       fmt::format("KV pool needs n_pages > 0 and page_size > 0 (got {}, {})", n_pages, page_size));
    if (m->stream) cuda_check(cudaStreamSynchronize(m->stream), "allocate_kv");
    m->drop_graphs();
    // One page more than asked: the scratch page that decode-graph pad rows write and attend to.
    m->kv.allocate(kv_page_bytes(page_size) * (std::size_t(n_pages) + 1), "the KV page pool");
    m->n_pages = n_pages;
    m->scratch_page = n_pages;
    m->page_size = page_size;
    m->kv_layer_elems = (std::size_t(n_pages) + 1) * page_size * m->cfg.kv_dim();
    m->plan_workspace();  // the metadata plan holds page tables
}

}  // namespace loradesk::runtime::cuda
