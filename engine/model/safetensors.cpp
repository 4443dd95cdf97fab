#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace loradesk::model {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same bound as the reference parser

[[noreturn]] void corrupt(const std::string& file, const std::string& what) {
    throw_expected(ErrorCode::corrupt_file, "corrupt safetensors file '" + file + "': " + what);
}

std::string fmt_shape(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace

int64_t TensorView::numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::string TensorView::shape_string() const { return fmt_shape(shape); }

std::vector<float> TensorView::to_f32() const {
    if (!is_float_dtype(dtype))
        throw_expected(ErrorCode::unsupported, "tensor '" + name + "' in '" + file + "' has dtype " +
                                                   std::string(dtype_name(dtype)) + "; expected F32, F16 or BF16");
    std::vector<float> out(static_cast<std::size_t>(numel()));
    convert_to_f32(data, dtype, out.size(), out.data());
    return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path, FileRead mode) : m_file(path, mode) {
    const std::size_t size = m_file.size();
    if (size < 8) corrupt(path, "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
    uint64_t n = 0;
    std::memcpy(&n, m_file.data(), 8);  // little-endian hosts only (x86-64, aarch64)
    if (n > kMaxHeaderBytes) corrupt(path, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
    if (n + 8 > size)
        corrupt(path, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
                          " bytes); the file is probably truncated");
    const char* hp = reinterpret_cast<const char*>(m_file.data() + 8);
    if (n == 0 || hp[0] != '{') corrupt(path, "header does not start with '{'");
    json header;
    try {
        header = json::parse(hp, hp + n);
    } catch (const json::exception& e) {
        corrupt(path, std::string("header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) corrupt(path, "header is not a JSON object");

    const uint8_t* buffer = m_file.data() + 8 + n;
    const uint64_t buffer_size = size - 8 - n;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const json& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object()) corrupt(path, "__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) corrupt(path, "__metadata__ value for '" + m.key() + "' is not a string");
                m_metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object()) corrupt(path, "entry for tensor '" + name + "' is not an object");
        TensorView t;
        t.name = name;
        t.file = path;
        if (!v.contains("dtype") || !v["dtype"].is_string()) corrupt(path, "tensor '" + name + "' has no dtype");
        std::string dt = v["dtype"].get<std::string>();
        if (!parse_dtype(dt, &t.dtype)) corrupt(path, "tensor '" + name + "' has unknown dtype '" + dt + "'");
        if (!v.contains("shape") || !v["shape"].is_array()) corrupt(path, "tensor '" + name + "' has no shape array");
        // The byte count, not only the element count, must stay far from 2^64: F32 [2^31, 2^31] is 2^62 elements
        // but 2^64 bytes, which wrapped to 0 and passed as an empty tensor with data_offsets [0, 0].
        const uint64_t max_numel = (uint64_t(1) << 62) / dtype_size(t.dtype);
        uint64_t numel = 1;
        for (auto& d : v["shape"]) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0)
                corrupt(path, "tensor '" + name + "' has a negative or non-integer dimension");
            uint64_t dim = d.get<uint64_t>();
            if (dim != 0 && numel > max_numel / dim) corrupt(path, "tensor '" + name + "' shape overflows");
            numel *= dim;
            t.shape.push_back(int64_t(dim));
        }
        const json& off = v.contains("data_offsets") ? v["data_offsets"] : json();
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            corrupt(path, "tensor '" + name + "' needs data_offsets [begin, end]");
        uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
        if (b > e) corrupt(path, "tensor '" + name + "' has data_offsets with begin > end");
        if (e > buffer_size)
            corrupt(path, "tensor '" + name + "' data ends at byte " + std::to_string(e) +
                              " but the data section has " + std::to_string(buffer_size) +
                              " bytes; the file is probably truncated");
        uint64_t expect = numel * dtype_size(t.dtype);
        if (e - b != expect)
            corrupt(path, "tensor '" + name + "' has " + std::to_string(e - b) + " bytes but shape " +
                              fmt_shape(t.shape) + " of " + dt + " needs " + std::to_string(expect));
        t.data = buffer + b;
        t.nbytes = std::size_t(e - b);
        m_tensors.push_back(std::move(t));
    }
    // Ranges must tile the data section exactly: no overlaps, no gaps, nothing trailing.
    std::vector<const TensorView*> by_offset;
    for (auto& t : m_tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](auto* a, auto* b) { return a->data != b->data ? a->data < b->data : a->nbytes < b->nbytes; });
    uint64_t expected_start = 0;
    for (auto* t : by_offset) {
        uint64_t b = uint64_t(t->data - buffer);
        if (b < expected_start) corrupt(path, "tensor '" + t->name + "' overlaps the tensor before it");
        if (b > expected_start) corrupt(path, "gap in the data section before tensor '" + t->name + "'");
        expected_start = b + t->nbytes;
    }
    if (expected_start != buffer_size)
        corrupt(path, std::to_string(buffer_size - expected_start) + " unreferenced bytes after the last tensor");
    std::sort(m_tensors.begin(), m_tensors.end(), [](auto& a, auto& b) { return a.name < b.name; });
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
    auto it = std::lower_bound(m_tensors.begin(), m_tensors.end(), name,
                               [](const TensorView& t, const std::string& n) { return t.name < n; });
    return it != m_tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& dir, const std::string& stem) : m_dir(dir) {
    namespace fs = std::filesystem;
    fs::path index = fs::path(dir) / (stem + ".safetensors.index.json");
    fs::path single = fs::path(dir) / (stem + ".safetensors");
    std::vector<std::string> shards;
    std::map<std::string, std::string> weight_map;
    if (fs::exists(index)) {
        json j;
        try {
            j = json::parse(read_text_file(index.string()));
        } catch (const json::exception& e) {
            throw_expected(ErrorCode::corrupt_file, "'" + index.string() + "' is not valid JSON: " + e.what());
        }
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
            throw_expected(ErrorCode::corrupt_file, "'" + index.string() + "' has no weight_map object");
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it.value().is_string())
                throw_expected(ErrorCode::corrupt_file,
                               "'" + index.string() + "': weight_map entry '" + it.key() + "' is not a file name");
            std::string file = it.value().get<std::string>();
            if (file.find('/') != std::string::npos || file == "..")
                throw_expected(ErrorCode::corrupt_file,
                               "'" + index.string() + "': shard name '" + file + "' must be a plain file name");
            weight_map[it.key()] = file;
            if (std::find(shards.begin(), shards.end(), file) == shards.end()) shards.push_back(file);
        }
    } else if (fs::exists(single)) {
        shards.push_back(single.filename().string());
    } else {
        std::string hint = fs::exists(fs::path(dir) / (stem + ".bin"))
                               ? " (found " + stem +
                                     ".bin, a pickle file that cannot be loaded safely; convert it with "
                                     "`python -c \"import torch; from safetensors.torch import save_file; "
                                     "save_file(torch.load('" +
                                     stem + ".bin'), '" + stem + ".safetensors')\"`)"
                               : "";
        throw_expected(ErrorCode::not_found, "no " + single.filename().string() + " or " + index.filename().string() +
                                                 " in '" + dir + "'" + hint);
    }
    for (auto& shard : shards) m_files.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / shard).string()));
    for (auto& f : m_files) {
        for (auto& t : f->tensors()) {
            if (!m_index.emplace(t.name, &t).second)
                throw_expected(ErrorCode::corrupt_file,
                               "tensor '" + t.name + "' appears in more than one shard of '" + dir + "'");
        }
    }
    for (auto& [name, file] : weight_map) {
        auto it = m_index.find(name);
        if (it == m_index.end())
            throw_expected(ErrorCode::corrupt_file,
                           "index lists tensor '" + name + "' in '" + file + "' but that shard lacks it");
    }
}

const TensorView* SafetensorsCheckpoint::find(const std::string& name) const {
    auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : it->second;
}

const TensorView& SafetensorsCheckpoint::get(const std::string& name) const {
    const TensorView* t = find(name);
    if (!t) throw_expected(ErrorCode::corrupt_file, "checkpoint '" + m_dir + "' has no tensor '" + name + "'");
    return *t;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
    std::vector<std::string> out;
    for (auto& [n, t] : m_index) out.push_back(n);
    return out;
}

std::size_t SafetensorsCheckpoint::total_bytes() const {
    std::size_t n = 0;
    for (auto& [name, t] : m_index) n += t->nbytes;
    return n;
}

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
    int64_t numel = 1;
    for (auto d : shape) numel *= d;
    if (std::size_t(numel) * dtype_size(dtype) != bytes.size())
        throw_error(ErrorCode::internal, "SafetensorsWriter: '" + name + "' byte size does not match its shape");
    m_entries.push_back({name, dtype, std::move(shape), std::move(bytes)});
}

void SafetensorsWriter::add_f32_as(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                   const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * dtype_size(dtype));
    convert_from_f32(values.data(), values.size(), dtype, bytes.data());
    add(name, dtype, std::move(shape), std::move(bytes));
}

std::size_t SafetensorsWriter::total_bytes() const {
    std::size_t n = 0;
    for (auto& e : m_entries) n += e.bytes.size();
    return n;
}

void SafetensorsWriter::write_entries(const std::string& path, const std::vector<const Entry*>& in,
                                      const std::map<std::string, std::string>& metadata) {
    std::vector<const Entry*> entries = in;
    std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
        std::size_t sa = dtype_size(a->dtype), sb = dtype_size(b->dtype);
        return sa != sb ? sa > sb : a->name < b->name;
    });
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t off = 0;
    for (auto* e : entries) {
        header[e->name] = {
            {"dtype", dtype_name(e->dtype)}, {"shape", e->shape}, {"data_offsets", {off, off + e->bytes.size()}}};
        off += e->bytes.size();
    }
    std::string h = header.dump();
    while (h.size() % 8) h.push_back(' ');
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw_error(ErrorCode::io, "cannot write '" + tmp + "'");
        uint64_t n = h.size();
        out.write(reinterpret_cast<const char*>(&n), 8);
        out.write(h.data(), std::streamsize(h.size()));
        for (auto* e : entries)
            out.write(reinterpret_cast<const char*>(e->bytes.data()), std::streamsize(e->bytes.size()));
        if (!out) throw_error(ErrorCode::io, "write failed for '" + tmp + "' (disk full?)");
    }
    std::filesystem::rename(tmp, path);
}

void SafetensorsWriter::write(const std::string& path) const {
    std::vector<const Entry*> all;
    for (auto& e : m_entries) all.push_back(&e);
    write_entries(path, all, m_metadata);
}

void SafetensorsWriter::write_checkpoint(const std::string& dir, const std::string& stem,
                                         std::size_t max_shard_bytes) const {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    if (total_bytes() <= max_shard_bytes) {
        write((fs::path(dir) / (stem + ".safetensors")).string());
        return;
    }
    std::vector<std::vector<const Entry*>> shards(1);
    std::size_t current = 0;
    for (auto& e : m_entries) {  // insertion order keeps layers together, as HF does
        if (current > 0 && current + e.bytes.size() > max_shard_bytes) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(&e);
        current += e.bytes.size();
    }
    json index = {{"metadata", {{"total_size", total_bytes()}}}, {"weight_map", json::object()}};
    char name[96];
    for (std::size_t i = 0; i < shards.size(); ++i) {
        std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", stem.c_str(), i + 1, shards.size());
        write_entries((fs::path(dir) / name).string(), shards[i], m_metadata);
        for (auto* e : shards[i]) index["weight_map"][e->name] = name;
    }
    write_text_file((fs::path(dir) / (stem + ".safetensors.index.json")).string(), index.dump(2));
}

}  // namespace loradesk::model
