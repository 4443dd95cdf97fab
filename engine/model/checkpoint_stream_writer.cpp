// Streaming safetensors checkpoint writer; see checkpoint_stream_writer.h.
#include "model/checkpoint_stream_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace loradesk::model {
namespace {

using json = nlohmann::json;
constexpr int64_t kChunkElements = 1 << 20;

std::size_t tensor_bytes(const StreamTensor& t) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    return std::size_t(n) * dtype_size(t.dtype);
}

void write_shard(const std::string& path, const std::vector<StreamTensor>& tensors, std::vector<std::size_t> members,
                 const StreamFill& fill, const StreamRawFill& raw_fill) {
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
        std::size_t sa = dtype_size(tensors[a].dtype), sb = dtype_size(tensors[b].dtype);
        return sa != sb ? sa > sb : tensors[a].name < tensors[b].name;
    });
    json header = json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t off = 0;
    for (std::size_t i : members) {
        const std::size_t nb = tensor_bytes(tensors[i]);
        header[tensors[i].name] = {
            {"dtype", dtype_name(tensors[i].dtype)}, {"shape", tensors[i].shape}, {"data_offsets", {off, off + nb}}};
        off += nb;
    }
    std::string h = header.dump();
    while (h.size() % 8) h.push_back(' ');
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw_error(ErrorCode::io, "cannot write '" + tmp + "'");
        uint64_t n = h.size();
        out.write(reinterpret_cast<const char*>(&n), 8);
        out.write(h.data(), std::streamsize(h.size()));
        std::vector<float> f32;
        std::vector<uint8_t> bytes;
        for (std::size_t i : members) {
            const StreamTensor& t = tensors[i];
            if (t.raw) {
                const std::vector<uint8_t> raw = raw_fill(i);
                if (raw.size() != tensor_bytes(t))
                    throw_error(ErrorCode::internal, "raw tensor '" + t.name + "' has the wrong byte count");
                out.write(reinterpret_cast<const char*>(raw.data()), std::streamsize(raw.size()));
                continue;
            }
            int64_t numel = 1;
            for (int64_t d : t.shape) numel *= d;
            for (int64_t first = 0; first < numel; first += kChunkElements) {
                const int64_t count = std::min(kChunkElements, numel - first);
                f32.resize(std::size_t(count));
                bytes.resize(std::size_t(count) * dtype_size(t.dtype));
                fill(i, first, count, f32.data());
                convert_from_f32(f32.data(), std::size_t(count), t.dtype, bytes.data());
                out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
            }
        }
        if (!out) throw_error(ErrorCode::io, "write failed for '" + tmp + "' (disk full?)");
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace

void write_streamed_checkpoint(const std::string& dir, const std::string& stem,
                               const std::vector<StreamTensor>& tensors, const StreamFill& fill,
                               std::size_t max_shard_bytes, const StreamRawFill& raw_fill) {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    std::size_t total = 0;
    for (const auto& t : tensors) total += tensor_bytes(t);
    std::vector<std::vector<std::size_t>> shards(1);
    std::size_t current = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {  // insertion order keeps layers together, as HF does
        const std::size_t nb = tensor_bytes(tensors[i]);
        if (current > 0 && current + nb > max_shard_bytes) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(i);
        current += nb;
    }
    if (shards.size() == 1) {
        write_shard((fs::path(dir) / (stem + ".safetensors")).string(), tensors, shards[0], fill, raw_fill);
        return;
    }
    json index = {{"metadata", {{"total_size", total}}}, {"weight_map", json::object()}};
    char name[160];
    for (std::size_t s = 0; s < shards.size(); ++s) {
        std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", stem.c_str(), s + 1, shards.size());
        write_shard((fs::path(dir) / name).string(), tensors, shards[s], fill, raw_fill);
        for (std::size_t i : shards[s]) index["weight_map"][tensors[i].name] = name;
    }
    write_text_file((fs::path(dir) / (stem + ".safetensors.index.json")).string(), index.dump(2));
}

}  // namespace loradesk::model
