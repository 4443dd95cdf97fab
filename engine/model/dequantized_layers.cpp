// Builds the f32 layer tables of a quantized model; see dequantized_layers.h.
#include "model/dequantized_layers.h"

#include "model/dequantize.h"

namespace loradesk::model {

DequantizedLayers::DequantizedLayers(const ModelWeights& weights, ThreadPool* pool) {
    struct Job {
        const QuantizedLinear* source;
        const TensorView** slot;
        std::vector<float>* rows;
    };
    std::vector<Job> jobs;
    m_layers.reserve(std::size_t(weights.n_layers()));
    for (int l = 0; l < weights.n_layers(); ++l) {
        m_layers.push_back(weights.layer(l));
        LayerWeights& d = m_layers.back();
        const std::pair<const QuantizedLinear*, const TensorView**> projections[] = {
            {d.quant.q, &d.q},       {d.quant.k, &d.k},   {d.quant.v, &d.v},      {d.quant.o, &d.o},
            {d.quant.gate, &d.gate}, {d.quant.up, &d.up}, {d.quant.down, &d.down}};
        for (const auto& [q, slot] : projections) {
            if (!q) continue;
            m_storage.emplace_back(std::size_t(q->out_features * q->in_features));
            jobs.push_back({q, slot, &m_storage.back()});
            m_bytes += m_storage.back().size() * sizeof(float);
        }
        d.quant = LayerQuant{};
    }
    auto run = [&](std::size_t begin, std::size_t end) {
        for (std::size_t j = begin; j < end; ++j) dequantize(*jobs[j].source, jobs[j].rows->data());
    };
    if (pool)
        pool->parallel_for(jobs.size(), run);
    else
        run(0, jobs.size());
    for (const Job& j : jobs) {
        TensorView v;
        v.name = j.source->qweight->name + " (dequantized)";
        v.dtype = DType::f32;
        v.shape = {j.source->out_features, j.source->in_features};
        v.data = reinterpret_cast<const uint8_t*>(j.rows->data());
        v.nbytes = j.rows->size() * sizeof(float);
        v.file = j.source->qweight->file;
        m_views.push_back(std::move(v));
        *j.slot = &m_views.back();
    }
}

}  // namespace loradesk::model
