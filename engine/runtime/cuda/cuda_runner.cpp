// CudaRunner setup: device checks, arenas, the KV pool. Weight upload is in cuda_weights.cpp, LoRA slots in
// cuda_runner_lora.cpp, the forward pass in cuda_forward.cpp.
#include "runtime/cuda/cuda_runner.h"

#include <fmt/format.h>

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "launchers.h"
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
    int least_priority = 0, greatest_priority = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least_priority, &greatest_priority),
               "cudaDeviceGetStreamPriorityRange");
    cuda_check(cudaStreamCreateWithPriority(&m->side_stream, cudaStreamNonBlocking, greatest_priority),
               "cudaStreamCreate");
    int compute_priority = 0;
    cuda_check(cudaStreamGetPriority(m->stream, &compute_priority), "cudaStreamGetPriority");
    cuda_check(cudaStreamCreateWithPriority(&m->side_stream_base, cudaStreamNonBlocking, compute_priority),
               "cudaStreamCreate");
    cuda_check(cudaEventCreateWithFlags(&m->fork_mark, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&m->join_mark, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&m->staging_free, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventCreateWithFlags(&m->compute_mark, cudaEventDisableTiming), "cudaEventCreate");
    cublas_check(cublasCreate(&m->cublas), "cublasCreate");
    cublas_check(cublasSetStream(m->cublas, m->stream), "cublasSetStream");
    m->upload_weights(model_dir);
    m->slot_loaded.assign(1, false);
    m->plan_workspace();
    log::info("CUDA runner on {}: {:.2f} GiB of weights", m->name, m->weights.bytes() / 1073741824.0);
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
    if (m->fork_mark) cudaEventDestroy(m->fork_mark);
    if (m->join_mark) cudaEventDestroy(m->join_mark);
    if (m->side_stream) cudaStreamDestroy(m->side_stream);
    if (m->side_stream_base) cudaStreamDestroy(m->side_stream_base);
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
