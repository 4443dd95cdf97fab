// f32 copies of a quantized model's projections and layer tables whose projection pointers all name float
// TensorViews (these copies, or the checkpoint's own views for projections left unquantized), so an f32
// runner reads every projection alike. The CPU reference runner builds one at load. Owns the copies and
// borrows the ModelWeights (which must outlive it); immutable after construction.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "core/thread_pool.h"
#include "model/model_weights.h"

namespace loradesk::model {

class DequantizedLayers {
  public:
    // Dequantizes every quantized projection (in parallel on pool when given); for an unquantized model
    // the layers are the weights' own and nothing is copied.
    explicit DequantizedLayers(const ModelWeights& weights, ThreadPool* pool = nullptr);

    const LayerWeights& layer(int i) const { return m_layers.at(std::size_t(i)); }
    std::size_t bytes() const { return m_bytes; }  // of the f32 copies

  private:
    std::vector<LayerWeights> m_layers;
    std::deque<TensorView> m_views;            // stable addresses for m_layers
    std::deque<std::vector<float>> m_storage;  // the f32 rows m_views point into
    std::size_t m_bytes = 0;
};

}  // namespace loradesk::model
