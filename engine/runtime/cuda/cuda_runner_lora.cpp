// CudaRunner LoRA slots: slot memory, the upload-ready prepared form (bf16, B transposed, in a pinned buffer
// made on a loader thread), slot uploads on the LoRA stream with one event per slot, and the per-step wait
// that holds a step back only for the uploads of slots its batch uses. Slot region layout: per layer, per
// module, A [max_rank, in] then Bt [max_rank, out]; only the leading `rank` rows of each are uploaded.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "launchers.h"
#include "runtime/cuda/cuda_runner_impl.h"

namespace loradesk::runtime::cuda {

namespace {

constexpr std::size_t kMaxPooledBuffers = 1;  // like the host tier's f32 recycle bin: one evicted adapter

std::size_t align16(std::size_t v) { return (v + 15) & ~std::size_t(15); }

void check_slot(int slot, int n_slots) {
    if (slot < 1 || slot > n_slots)
        throw_error(ErrorCode::invalid_argument, fmt::format("LoRA slot {} outside 1..{}", slot, n_slots));
}

// One host -> device copy of a slot upload, in bf16 elements (source: the compact values array).
struct SlotCopy {
    std::size_t dst = 0, src = 0, n = 0;
};

// Converts w into compact form: per module with rank r, A's r rows then Bt's r rows (B transposed to
// [rank, out] so the expand reads coalesced rows), back to back. Fills the module's rank/scale column and
// the copy list, merging copies that are contiguous on both sides. Runs on loader threads (prepare) and on
// the loop (the f32 fallback); reads only state fixed by configure_lora_slots.
void fill_compact(const CudaRunner::Impl& s, const LoraWeights& w, uint16_t* values, int32_t* ranks, float* scales,
                  std::vector<SlotCopy>& copies) {
    copies.clear();
    std::size_t src = 0;
    auto add_copy = [&](std::size_t dst, std::size_t n) {
        if (n == 0) return;
        if (!copies.empty() && copies.back().dst + copies.back().n == dst && copies.back().src + copies.back().n == src)
            copies.back().n += n;
        else
            copies.push_back({dst, src, n});
        src += n;
    };
    for (int l = 0; l < s.cfg.n_layers; ++l)
        for (int mi = 0; mi < kNumLoraModules; ++mi) {
            const LoraModuleWeights& mw = w.layers[std::size_t(l)][std::size_t(mi)];
            const auto [in, out] = s.module_dims(mi);
            const std::size_t ti = std::size_t(l) * kNumLoraModules + mi;
            const std::size_t rank = std::size_t(mw.rank);
            ranks[ti] = mw.rank;
            scales[ti] = mw.scale;
            uint16_t* a = values + src;
            uint16_t* bt = a + rank * in;
            for (std::size_t i = 0; i < rank * in; ++i) a[i] = f32_to_bf16(mw.a[i]);
            // Transpose in blocks of output rows so that both the reads of B and the writes of Bt stay in cache.
            constexpr int kBlock = 64;
            for (int o0 = 0; o0 < out; o0 += kBlock)
                for (std::size_t r = 0; r < rank; ++r)
                    for (int o = o0; o < std::min(out, o0 + kBlock); ++o)
                        bt[r * out + o] = f32_to_bf16(mw.b[std::size_t(o) * rank + r]);
            const std::size_t a_off = s.module_offset[ti];
            add_copy(a_off, rank * in);
            add_copy(a_off + std::size_t(s.max_rank) * in, rank * out);
        }
}

std::size_t compact_elems(const CudaRunner::Impl& s, const LoraWeights& w) {
    std::size_t n = 0;
    for (int l = 0; l < s.cfg.n_layers; ++l)
        for (int mi = 0; mi < kNumLoraModules; ++mi) {
            const auto [in, out] = s.module_dims(mi);
            n += std::size_t(w.layers[std::size_t(l)][std::size_t(mi)].rank) * (in + out);
        }
    return n;
}

// Pinned buffer from the pool (the smallest that fits) or a fresh one; returned to the pool on release.
std::shared_ptr<uint8_t> take_pinned(const std::shared_ptr<LoraPinnedPool>& pool, std::size_t bytes,
                                     std::size_t& capacity) {
    uint8_t* ptr = nullptr;
    {
        std::lock_guard lock(pool->mutex);
        auto best = pool->free.end();
        for (auto it = pool->free.begin(); it != pool->free.end(); ++it)
            if (it->second >= bytes && (best == pool->free.end() || it->second < best->second)) best = it;
        if (best != pool->free.end()) {
            ptr = best->first;
            capacity = best->second;
            pool->free.erase(best);
        }
    }
    if (!ptr) {
        // Portable: the loader thread that allocates may not have the runner's device current.
        cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&ptr), bytes, cudaHostAllocPortable);
        if (e != cudaSuccess) {
            cudaGetLastError();
            throw_expected(ErrorCode::unavailable,
                           fmt::format("could not pin {:.1f} MiB of host memory for a LoRA adapter ({})",
                                       bytes / 1048576.0, cudaGetErrorString(e)));
        }
        capacity = bytes;
    }
    std::weak_ptr<LoraPinnedPool> weak = pool;
    const std::size_t cap = capacity;
    return std::shared_ptr<uint8_t>(ptr, [weak, cap](uint8_t* p) {
        if (auto pl = weak.lock()) {
            std::lock_guard lock(pl->mutex);
            pl->free.emplace_back(p, cap);
            if (pl->free.size() <= kMaxPooledBuffers) return;
            // Over the bound: free the smallest (the likeliest not to fit the next adapter).
            auto smallest = std::min_element(pl->free.begin(), pl->free.end(),
                                             [](auto& x, auto& y) { return x.second < y.second; });
            cudaFreeHost(smallest->first);
            pl->free.erase(smallest);
            return;
        }
        cudaFreeHost(p);
    });
}

// The CUDA runner's prepared adapter: one pinned buffer holding the rank and scale columns ([n_layers * 7]
// each) and the compact bf16 values, plus the copies that place the values in a slot.
class CudaPreparedLora final : public PreparedLora {
  public:
    const CudaRunner::Impl* owner = nullptr;
    int max_rank = 0;  // of the slots it was laid out for
    std::shared_ptr<uint8_t> buffer;
    std::size_t capacity = 0;
    const int32_t* ranks = nullptr;
    const float* scales = nullptr;
    const uint16_t* values = nullptr;
    std::vector<SlotCopy> copies;

    std::size_t bytes() const override { return capacity + copies.capacity() * sizeof(SlotCopy) + sizeof(*this); }
};

}  // namespace

LoraPinnedPool::~LoraPinnedPool() {
    for (auto& [p, n] : free) cudaFreeHost(p);
}

void CudaRunner::Impl::validate_lora(const LoraWeights& w) const {
    if (n_slots == 0) throw_error(ErrorCode::internal, "LoRA weights given to a CUDA runner without LoRA slots");
    if (int(w.layers.size()) != cfg.n_layers)
        throw_expected(
            ErrorCode::invalid_argument,
            fmt::format(
                "LoRA weights have {} layers but the base model has {} (is the adapter for another base model?)",
                w.layers.size(), cfg.n_layers));
    for (std::size_t l = 0; l < w.layers.size(); ++l)
        for (int mi = 0; mi < kNumLoraModules; ++mi) {
            const LoraModuleWeights& mw = w.layers[l][std::size_t(mi)];
            if (mw.rank == 0) continue;
            auto [in, out] = module_dims(mi);
            std::string where = fmt::format("layer {} {}", l, lora_module_name(LoraModule(mi)));
            if (mw.rank < 0 || mw.rank > max_rank)
                throw_expected(ErrorCode::invalid_argument,
                               fmt::format("LoRA {} has rank {} but slots hold at most rank {} (raise --max-lora-rank)",
                                           where, mw.rank, max_rank));
            if (mw.a.size() != std::size_t(mw.rank) * in || mw.b.size() != std::size_t(out) * mw.rank)
                throw_expected(
                    ErrorCode::invalid_argument,
                    fmt::format("LoRA {} expects A [{}, {}] and B [{}, {}] for this base model but got {} and {} "
                                "values (is the adapter for another base model?)",
                                where, mw.rank, in, out, mw.rank, mw.a.size(), mw.b.size()));
        }
}

void CudaRunner::configure_lora_slots(int n_slots, int max_rank) {
    if (n_slots < 0 || max_rank < 0)
        throw_expected(ErrorCode::invalid_argument, "LoRA slots and max rank must not be negative");
    if (max_rank > 1024)
        throw_expected(ErrorCode::unsupported,
                       fmt::format("the CUDA runner supports LoRA ranks up to 1024, not {}", max_rank));
    auto& s = *m;
    cuda_check(cudaSetDevice(s.device), "cudaSetDevice");
    if (s.stream) cuda_check(cudaStreamSynchronize(s.stream), "configure_lora_slots");
    cuda_check(cudaStreamSynchronize(s.lora_stream), "configure_lora_slots");
    s.drop_graphs();  // they hold the old slot arena's pointers
    s.slot_source.clear();
    for (cudaEvent_t e : s.slot_ready)
        if (e) cudaEventDestroy(e);
    s.slot_ready.assign(std::size_t(n_slots) + 1, nullptr);
    for (int i = 1; i <= n_slots; ++i)
        cuda_check(cudaEventCreateWithFlags(&s.slot_ready[std::size_t(i)], cudaEventDisableTiming), "cudaEventCreate");
    s.slot_pending.assign(std::size_t(n_slots) + 1, false);
    s.slot_source.resize(std::size_t(n_slots) + 1);
    s.n_slots = n_slots;
    s.max_rank = max_rank;
    s.module_offset.assign(std::size_t(s.cfg.n_layers) * kNumLoraModules, 0);
    std::size_t off = 0;
    for (int l = 0; l < s.cfg.n_layers; ++l)
        for (int mi = 0; mi < kNumLoraModules; ++mi) {
            auto [in, out] = s.module_dims(mi);
            s.module_offset[std::size_t(l) * kNumLoraModules + mi] = off;
            off += std::size_t(max_rank) * (in + out);
        }
    s.slot_elems = (off + 127) & ~std::size_t(127);  // keeps every slot's A 16-byte aligned
    const std::size_t column = std::size_t(s.cfg.n_layers) * kNumLoraModules;
    const std::size_t table = column * (n_slots + 1);
    const std::size_t weight_bytes = s.slot_elems * 2 * std::size_t(n_slots);
    auto align_up = [](std::size_t v) { return (v + 255) & ~std::size_t(255); };
    s.lora.allocate(align_up(weight_bytes) + align_up(table * 4) * 2, "the LoRA slots");
    s.d_ranks = reinterpret_cast<int32_t*>(s.lora.data() + align_up(weight_bytes));
    s.d_scales = reinterpret_cast<float*>(s.lora.data() + align_up(weight_bytes) + align_up(table * 4));
    cuda_check(cudaMemsetAsync(s.d_ranks, 0, table * 4, s.lora_stream), "LoRA ranks");  // every slot empty
    cuda_check(cudaMemsetAsync(s.d_scales, 0, table * 4, s.lora_stream), "LoRA scales");
    cuda_check(cudaStreamSynchronize(s.lora_stream), "configure_lora_slots");
    // f32-path staging: the largest compact form (every module at max_rank) and its rank/scale column.
    s.lora_staging.reserve(align16(column * 8) + s.slot_elems * 2);
    s.zero_column.reserve(column * 4);
    std::memset(s.zero_column.data(), 0, column * 4);
    s.slot_loaded.assign(std::size_t(n_slots) + 1, false);
    if (max_rank > 64) s.plan_workspace();  // the LoRA scratch (xa) is planned for ranks up to 64
    // Pin the pool's buffer for the largest prepared adapter now, not on the first cold load: cudaHostAlloc
    // holds a driver-wide lock that stalls the loop thread's launches (one 44 ms step at batch 1, H100).
    if (n_slots > 0) {
        std::size_t capacity = 0;
        take_pinned(s.pinned_pool, align16(column * 8) + s.slot_elems * 2, capacity);  // straight back to the pool
    }
}

std::shared_ptr<const PreparedLora> CudaRunner::prepare_lora(const LoraWeights& w) const {
    const auto& s = *m;
    s.validate_lora(w);
    cuda_check(cudaSetDevice(s.device), "cudaSetDevice");  // this is a loader thread
    const std::size_t column = std::size_t(s.cfg.n_layers) * kNumLoraModules;
    const std::size_t values_at = align16(column * 8);
    auto p = std::make_shared<CudaPreparedLora>();
    p->owner = &s;
    p->max_rank = s.max_rank;
    p->buffer = take_pinned(s.pinned_pool, values_at + compact_elems(s, w) * 2, p->capacity);
    uint8_t* base = p->buffer.get();
    auto* ranks = reinterpret_cast<int32_t*>(base);
    auto* scales = reinterpret_cast<float*>(base + column * 4);
    auto* values = reinterpret_cast<uint16_t*>(base + values_at);
    fill_compact(s, w, values, ranks, scales, p->copies);
    p->ranks = ranks, p->scales = scales, p->values = values;
    return p;
}

// The slot's previous source is released only once its upload has landed (normally long ago): the pinned
// buffer goes back to the pool, where the next preparation may overwrite it. The new upload waits for the
// steps already queued on the compute stream, which may still read the adapter it replaces.
void CudaRunner::Impl::begin_slot_upload(int slot) {
    const auto i = std::size_t(slot);
    if (slot_source[i]) {
        cuda_check(cudaEventSynchronize(slot_ready[i]), "waiting for the slot's previous LoRA upload");
        slot_source[i].reset();
    }
    cuda_check(cudaEventRecord(compute_mark, stream), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(lora_stream, compute_mark, 0), "cudaStreamWaitEvent");
}

// Writes one slot's column of the [n_layers * 7][n_slots + 1] rank and scale tables; the other slots'
// entries are not touched, so steps using them may run meanwhile.
void CudaRunner::Impl::upload_column(int slot, const int32_t* ranks, const float* scales) {
    const std::size_t rows = std::size_t(cfg.n_layers) * kNumLoraModules, pitch = std::size_t(n_slots + 1) * 4;
    cuda_check(cudaMemcpy2DAsync(d_ranks + slot, pitch, ranks, 4, 4, rows, cudaMemcpyHostToDevice, lora_stream),
               "LoRA ranks");
    if (scales)
        cuda_check(cudaMemcpy2DAsync(d_scales + slot, pitch, scales, 4, 4, rows, cudaMemcpyHostToDevice, lora_stream),
                   "LoRA scales");
}

void CudaRunner::Impl::end_slot_upload(int slot, std::shared_ptr<const PreparedLora> source) {
    const auto i = std::size_t(slot);
    cuda_check(cudaEventRecord(slot_ready[i], lora_stream), "cudaEventRecord");
    slot_pending[i] = true;
    slot_source[i] = std::move(source);
}

void CudaRunner::Impl::wait_for_lora_slots(const ForwardBatch& b) {
    for (int q = 0; q < b.n_seqs() && !b.seq_lora_slot.empty(); ++q) {
        const int slot = b.seq_lora_slot[std::size_t(q)];
        if (slot < 1 || slot > n_slots || !slot_pending[std::size_t(slot)]) continue;  // check_slots reports bad ones
        cuda_check(cudaStreamWaitEvent(stream, slot_ready[std::size_t(slot)], 0), "cudaStreamWaitEvent");
        slot_pending[std::size_t(slot)] = false;
        ++lora_waits;
    }
}

// Only issues copies: the conversion happened in prepare_lora, on the thread that read the adapter.
void CudaRunner::load_prepared_lora_slot(int slot, std::shared_ptr<const PreparedLora> prepared) {
    auto& s = *m;
    check_slot(slot, s.n_slots);
    const auto* p = dynamic_cast<const CudaPreparedLora*>(prepared.get());
    if (!p || p->owner != &s || p->max_rank != s.max_rank)
        throw_error(ErrorCode::internal, "prepared LoRA weights come from another runner or slot configuration");
    s.begin_slot_upload(slot);
    uint16_t* dst = reinterpret_cast<uint16_t*>(s.lora.data()) + std::size_t(slot - 1) * s.slot_elems;
    for (const SlotCopy& c : p->copies)
        cuda_check(cudaMemcpyAsync(dst + c.dst, p->values + c.src, c.n * 2, cudaMemcpyHostToDevice, s.lora_stream),
                   "LoRA upload");
    s.upload_column(slot, p->ranks, p->scales);
    s.end_slot_upload(slot, std::move(prepared));
    s.slot_loaded[std::size_t(slot)] = true;
}

// The f32 path (no prepared form: its preparation failed, or a caller without a loader thread): converts into
// the runner's own staging buffer on this thread, then uploads like a prepared form.
void CudaRunner::load_lora_slot(int slot, const LoraWeights& w) {
    auto& s = *m;
    check_slot(slot, s.n_slots);
    s.validate_lora(w);
    cuda_check(cudaEventSynchronize(s.staging_free), "waiting for the previous LoRA upload");  // staging is reused
    const std::size_t column = std::size_t(s.cfg.n_layers) * kNumLoraModules;
    uint8_t* base = s.lora_staging.data();
    auto* ranks = reinterpret_cast<int32_t*>(base);
    auto* scales = reinterpret_cast<float*>(base + column * 4);
    auto* values = reinterpret_cast<uint16_t*>(base + align16(column * 8));
    std::vector<SlotCopy> copies;
    fill_compact(s, w, values, ranks, scales, copies);
    s.begin_slot_upload(slot);
    uint16_t* dst = reinterpret_cast<uint16_t*>(s.lora.data()) + std::size_t(slot - 1) * s.slot_elems;
    for (const SlotCopy& c : copies)
        cuda_check(cudaMemcpyAsync(dst + c.dst, values + c.src, c.n * 2, cudaMemcpyHostToDevice, s.lora_stream),
                   "LoRA upload");
    s.upload_column(slot, ranks, scales);
    cuda_check(cudaEventRecord(s.staging_free, s.lora_stream), "cudaEventRecord");
    s.end_slot_upload(slot, nullptr);
    s.slot_loaded[std::size_t(slot)] = true;
}

void CudaRunner::clear_lora_slot(int slot) {
    auto& s = *m;
    check_slot(slot, s.n_slots);
    s.begin_slot_upload(slot);
    s.upload_column(slot, reinterpret_cast<const int32_t*>(s.zero_column.data()), nullptr);
    s.end_slot_upload(slot, nullptr);
    s.slot_loaded[std::size_t(slot)] = false;
}

bool CudaRunner::lora_uploads_done() const {
    for (std::size_t i = 1; i < m->slot_ready.size(); ++i)
        if (lora_slot_uploading(int(i))) return false;
    return true;
}

bool CudaRunner::lora_slot_uploading(int slot) const {
    check_slot(slot, m->n_slots);
    cudaError_t e = cudaEventQuery(m->slot_ready[std::size_t(slot)]);
    if (e == cudaErrorNotReady) return true;
    cuda_check(e, "cudaEventQuery");
    return false;
}

int64_t CudaRunner::lora_upload_waits() const { return m->lora_waits; }

}  // namespace loradesk::runtime::cuda
