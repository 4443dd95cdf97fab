// RoPE frequency tables and rotation; see rope.h.
#include "runtime/cpu/rope.h"

#include <cmath>

namespace loradesk::runtime::cpu {

std::vector<float> rope_inv_freq(const model::ModelConfig& c) {
    const int half = c.head_dim / 2;
    std::vector<float> inv(std::size_t(half), 0.0f);
    for (int i = 0; i < half; ++i) {
        // transformers computes base ** (2i/d) in float32; doing it in double then rounding stays
        // within one ulp of that.
        inv[std::size_t(i)] = float(1.0 / std::pow(double(c.rope_theta), double(2 * i) / double(c.head_dim)));
    }
    const model::RopeScaling& s = c.rope_scaling;
    if (s.type == model::RopeType::linear) {
        for (float& f : inv) f /= s.factor;
    } else if (s.type == model::RopeType::llama3) {
        const double kPi = 3.14159265358979323846;
        const double low_wavelen = double(s.original_max_position_embeddings) / s.low_freq_factor;
        const double high_wavelen = double(s.original_max_position_embeddings) / s.high_freq_factor;
        for (float& f : inv) {
            const double wavelen = 2 * kPi / double(f);
            if (wavelen < high_wavelen) continue;
            if (wavelen > low_wavelen) {
                f = float(double(f) / s.factor);
                continue;
            }
            const double smooth = (double(s.original_max_position_embeddings) / wavelen - s.low_freq_factor) /
                                  (double(s.high_freq_factor) - s.low_freq_factor);
            f = float((1 - smooth) * double(f) / s.factor + smooth * double(f));
        }
    }
    return inv;
}

void apply_rope(float* x, int n_heads, int head_dim, int position, const std::vector<float>& inv_freq) {
    const int half = head_dim / 2;
    for (int i = 0; i < half; ++i) {
        // transformers forms the angle as a float32 product, then takes cos/sin of it.
        const float angle = float(position) * inv_freq[std::size_t(i)];
        const float c = float(std::cos(double(angle))), s = float(std::sin(double(angle)));
        for (int h = 0; h < n_heads; ++h) {
            float* v = x + std::size_t(h) * head_dim;
            const float x1 = v[i], x2 = v[i + half];
            v[i] = x1 * c - x2 * s;
            v[i + half] = x2 * c + x1 * s;
        }
    }
}

}  // namespace loradesk::runtime::cpu
