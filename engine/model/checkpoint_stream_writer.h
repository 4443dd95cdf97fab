// Writes a safetensors checkpoint whose tensors are produced on demand, chunk by chunk, so that
// multi-gigabyte synthetic models never sit in RAM. Same layout rules as SafetensorsWriter (header
// padded to 8, tensors sorted by dtype size then name) and the same Hugging Face sharding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace loradesk::model {

struct StreamTensor {
    std::string name;
    DType dtype = DType::bf16;
    std::vector<int64_t> shape;
    bool raw = false;  // bytes come whole from the StreamRawFill (packed quantized tensors), not from f32
};

// fill(tensor_index, first_element, count, out) writes `count` f32 values of the tensor starting at
// `first_element`; the writer converts them to the tensor's dtype.
using StreamFill = std::function<void(std::size_t, int64_t, int64_t, float*)>;
// raw_fill(tensor_index) returns a raw tensor's bytes, exactly numel * dtype_size of them.
using StreamRawFill = std::function<std::vector<uint8_t>(std::size_t)>;

// Writes dir/<stem>.safetensors, or <stem>-0000k-of-0000n.safetensors + <stem>.safetensors.index.json
// when the tensor bytes exceed max_shard_bytes. Throws Error(io) on write failures.
void write_streamed_checkpoint(const std::string& dir, const std::string& stem,
                               const std::vector<StreamTensor>& tensors, const StreamFill& fill,
                               std::size_t max_shard_bytes, const StreamRawFill& raw_fill = {});

}  // namespace loradesk::model
