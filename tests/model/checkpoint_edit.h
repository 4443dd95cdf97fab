// Test helpers for corrupting synthesized checkpoints: rewrite a model.safetensors tensor by tensor, and
// read the error ModelWeights gives for a folder. Shared by tst_model_weights and tst_quantized_model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model_weights.h"
#include "model/safetensors.h"

namespace loradesk::model::testing {

// Rewrites dir/model.safetensors with `edit(name, dtype, shape, bytes)` applied to a copy of each tensor
// (return false to drop it).
template <class Edit>
void rewrite_checkpoint(const std::string& dir, Edit edit) {
    SafetensorsWriter w;
    {
        SafetensorsFile f(dir + "/model.safetensors");
        for (const TensorView& t : f.tensors()) {
            std::string name = t.name;
            DType dtype = t.dtype;
            std::vector<int64_t> shape = t.shape;
            std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
            if (edit(name, dtype, shape, bytes)) w.add(name, dtype, shape, std::move(bytes));
        }
    }
    w.write(dir + "/model.safetensors");
}

// The message ModelWeights throws for `dir`, or "" when it loads.
inline std::string weights_error(const std::string& dir) {
    try {
        ModelWeights w(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace loradesk::model::testing
