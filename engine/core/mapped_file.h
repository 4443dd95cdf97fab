// Read-only memory map of a whole file (RAII). Used for safetensors so weights load without copies.
// Not thread-safe to move; the mapping itself may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loradesk {

class MappedFile {
public:
    MappedFile() = default;
    explicit MappedFile(const std::string& path);  // throws Error(not_found / io)
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return m_data; }
    std::size_t size() const { return m_size; }
    const std::string& path() const { return m_path; }

private:
    void reset();
    std::string m_path;
    const uint8_t* m_data = nullptr;
    std::size_t m_size = 0;
};

// Whole-file reads for small text files (config.json, tokenizer.json). Throws Error on failure.
std::string read_text_file(const std::string& path);
void write_text_file(const std::string& path, std::string_view text);  // atomic: temp file + rename

}  // namespace loradesk
