// A whole file's bytes, read-only (RAII): either memory-mapped (base model weights: loaded without copies) or
// read into memory the object owns (adapters: a file that is rewritten or truncated in place while it is mapped
// kills the process with SIGBUS on the next read of a vanished page, and adapter folders are edited while the
// server runs). Only regular files are opened, never blocking: a FIFO, socket or device named like a model or
// adapter file is refused at once instead of hanging the thread that opened it.
// Not thread-safe to move; the bytes themselves may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loradesk {

enum class FileRead {
    map,   // mmap: no copy; the file must not shrink while mapped (model weights)
    copy,  // pread into owned memory, checked against changes while reading (adapters, anything user-edited)
};

class MappedFile {
  public:
    MappedFile() = default;
    // Throws Error: not_found; invalid_argument for a directory or a file that is not regular; io; unavailable
    // when a copied file changed size or time while it was read (try again once it is completely written).
    explicit MappedFile(const std::string& path, FileRead mode = FileRead::map);
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

// Whole-file reads for text files (config.json, tokenizer.json): regular files only, opened without blocking,
// at most max_bytes (a clear Error names the limit). Throws Error on failure.
std::string read_text_file(const std::string& path, std::size_t max_bytes = std::size_t(256) << 20);
void write_text_file(const std::string& path, std::string_view text);  // atomic: temp file + rename

}  // namespace loradesk
