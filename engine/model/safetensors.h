// safetensors files: a validating, zero-copy (mmap) reader, a writer, and a multi-file checkpoint view
// (model.safetensors or model.safetensors.index.json shards). Owns the mappings; tensor views borrow
// from them. Not thread-safe to build; read-only use from many threads is fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace loradesk::model {

struct TensorView {
    std::string name;
    DType dtype = DType::f32;
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;  // inside a mapping; may be unaligned: memcpy, never cast
    std::size_t nbytes = 0;
    std::string file;  // for error messages

    int64_t numel() const;
    std::string shape_string() const;  // "[4096, 1024]"
    // Copies into f32 (f32/f16/bf16 sources). Throws Error(unsupported) for other dtypes.
    std::vector<float> to_f32() const;
};

class SafetensorsFile {
  public:
    // Maps (or, with FileRead::copy, reads into owned memory) and fully validates the file; throws
    // Error(corrupt_file) naming the file and tensor. Adapters are copied: see MappedFile for why.
    explicit SafetensorsFile(const std::string& path, FileRead mode = FileRead::map);

    const std::string& path() const { return m_file.path(); }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    const std::vector<TensorView>& tensors() const { return m_tensors; }  // sorted by name
    const TensorView* find(const std::string& name) const;

  private:
    MappedFile m_file;
    std::map<std::string, std::string> m_metadata;
    std::vector<TensorView> m_tensors;
};

// A checkpoint directory: one file, or shards listed in model.safetensors.index.json.
// `stem` is "model" for base checkpoints and "adapter_model" for PEFT adapters.
class SafetensorsCheckpoint {
  public:
    explicit SafetensorsCheckpoint(const std::string& dir, const std::string& stem = "model");

    const TensorView* find(const std::string& name) const;
    // Throws Error(corrupt_file) "checkpoint <dir> has no tensor <name>" when missing.
    const TensorView& get(const std::string& name) const;
    std::vector<std::string> names() const;
    const std::string& dir() const { return m_dir; }
    std::size_t total_bytes() const;

  private:
    std::string m_dir;
    std::vector<std::unique_ptr<SafetensorsFile>> m_files;
    std::map<std::string, const TensorView*> m_index;
};

// Builds a safetensors file. Tensors are laid out like the reference writer: sorted by dtype size
// (descending) then name, header padded with spaces to a multiple of 8.
class SafetensorsWriter {
  public:
    void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
    void add_f32_as(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values);
    void set_metadata(std::string key, std::string value) { m_metadata[std::move(key)] = std::move(value); }
    std::size_t total_bytes() const;
    std::size_t size() const { return m_entries.size(); }
    void write(const std::string& path) const;  // throws Error(io)

    // Writes dir/<stem>.safetensors, or shards + <stem>.safetensors.index.json when the tensor bytes
    // exceed max_shard_bytes (Hugging Face names: model-00001-of-00004.safetensors).
    void write_checkpoint(const std::string& dir, const std::string& stem, std::size_t max_shard_bytes) const;

  private:
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<int64_t> shape;
        std::vector<uint8_t> bytes;
    };
    static void write_entries(const std::string& path, const std::vector<const Entry*>& entries,
                              const std::map<std::string, std::string>& metadata);
    std::vector<Entry> m_entries;
    std::map<std::string, std::string> m_metadata{{"format", "pt"}};
};

}  // namespace loradesk::model
