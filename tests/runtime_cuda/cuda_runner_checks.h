// What the CUDA runner's whole-model tests share (tst_cuda_runner, tst_cuda_graphs, tst_cuda_lora_streams):
// synthesized checkpoints, random adapters and the comparisons against the CPU reference runner.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <QString>

#include "core/dtype.h"
#include "model/synth_model.h"
#include "runtime/model_runner.h"

namespace loradesk::runtime::testing {

// rank 0 leaves a module unadapted; others get random A, B so that the delta is visible but not dominant.
inline LoraWeights random_lora(const model::ModelConfig& c, int rank, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::normal_distribution<float> dist(0.0f, 1.0f);
    LoraWeights w;
    w.layers.resize(std::size_t(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
        for (int m = 0; m < kNumLoraModules; ++m) {
            if ((l + m + int(seed)) % 4 == 0) continue;  // some modules stay unadapted
            int in = m == 3 ? c.q_dim() : m == 6 ? c.intermediate_size : c.hidden_size;
            int out = m == 0               ? c.q_dim()
                      : (m == 1 || m == 2) ? c.kv_dim()
                      : m >= 4 && m <= 5   ? c.intermediate_size
                                           : c.hidden_size;
            auto& mw = w.layers[std::size_t(l)][std::size_t(m)];
            mw.rank = rank;
            mw.scale = 2.0f / float(rank);
            mw.a.resize(std::size_t(rank) * in);
            mw.b.resize(std::size_t(out) * rank);
            for (auto& v : mw.a) v = bf16_to_f32(f32_to_bf16(dist(rng) / std::sqrt(float(in))));
            for (auto& v : mw.b) v = bf16_to_f32(f32_to_bf16(dist(rng) * 0.5f));
        }
    return w;
}

// A synthetic checkpoint of `preset` in dir, quantized as `quant` ("" = bf16).
inline model::ModelConfig synth(const std::string& dir, const QString& preset, uint64_t seed,
                                const QString& quant = {}) {
    model::SynthOptions so;
    so.preset = preset.toStdString(), so.out_dir = dir, so.seed = seed, so.quant = quant.toStdString();
    return model::synth_model(so);
}

// The tiny preset; tests pass their own seed, so that a failure reproduces.
inline model::ModelConfig synth_tiny(const std::string& dir, uint64_t seed = model::SynthOptions{}.seed) {
    return synth(dir, "tiny", seed);
}

inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num += double(a[i] - b[i]) * (a[i] - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

// Rows where the CPU's best token leads clearly must have the same argmax on the GPU.
inline int argmax_disagreements(const std::vector<float>& gpu, const std::vector<float>& cpu, int vocab) {
    int bad = 0;
    for (std::size_t r = 0; r < cpu.size() / vocab; ++r) {
        auto row = cpu.begin() + r * vocab;
        std::vector<float> sorted(row, row + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
        int c = int(std::max_element(row, row + vocab) - row);
        int g =
            int(std::max_element(gpu.begin() + r * vocab, gpu.begin() + (r + 1) * vocab) - (gpu.begin() + r * vocab));
        if (c != g && sorted[0] - sorted[1] > 0.02f * std::max(1.0f, std::fabs(sorted[0]))) ++bad;
    }
    return bad;
}

}  // namespace loradesk::runtime::testing
