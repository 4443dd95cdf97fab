#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace loradesk {

namespace {

// Opens a regular file for reading without ever blocking (O_NONBLOCK: opening a FIFO for reading would wait for
// a writer), and refuses anything else. The caller owns the descriptor.
int open_regular(const std::string& path, struct stat& st) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) throw_expected(ErrorCode::not_found, "cannot open '" + path + "': no such file");
        throw_expected(ErrorCode::io, "cannot open '" + path + "': " + std::strerror(err));
    }
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw_error(ErrorCode::io, "cannot stat '" + path + "': " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw_expected(ErrorCode::invalid_argument, "'" + path + "' is a directory, expected a file");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw_expected(ErrorCode::invalid_argument, "'" + path +
                                                        "' is not a regular file (a FIFO, socket or device); "
                                                        "replace it with the file itself");
    }
    return fd;
}

bool same_version(const struct stat& a, const struct stat& b) {
    return a.st_ino == b.st_ino && a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
           a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

[[noreturn]] void changed_while_read(const std::string& path) {
    throw_expected(ErrorCode::unavailable, "'" + path +
                                               "' changed while it was read; try again once it is completely "
                                               "written (write a new file and rename it over the old one)");
}

// Reads size bytes of fd into dst with pread; a short read means the file was truncated under us.
void read_all(int fd, const std::string& path, uint8_t* dst, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = ::pread(fd, dst + done, size - done, off_t(done));
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            throw_error(ErrorCode::io, "cannot read '" + path + "': " + std::strerror(err));
        }
        if (n == 0) changed_while_read(path);
        done += std::size_t(n);
    }
}

struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::string& path, FileRead mode) : m_path(path) {
    struct stat st {};
    const int fd = open_regular(path, st);
    FdCloser closer{fd};
    const std::size_t size = std::size_t(st.st_size);
    if (size == 0) return;
    if (mode == FileRead::map) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            throw_error(ErrorCode::io, "cannot map '" + path + "': " + std::strerror(err));
        }
        m_data = static_cast<const uint8_t*>(p);
        m_size = size;
        return;
    }
    // Anonymous memory rather than a vector: no zero-fill pass, and reset() releases both forms alike.
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw_expected(ErrorCode::io, "cannot allocate " + std::to_string(size) + " bytes to read '" + path + "'");
    m_data = static_cast<const uint8_t*>(p);
    m_size = size;
    try {  // a constructor that throws runs no destructor
        read_all(fd, path, static_cast<uint8_t*>(p), size);
        struct stat after {};
        if (::fstat(fd, &after) != 0 || !same_version(st, after)) changed_while_read(path);
    } catch (...) {
        reset();
        throw;
    }
    ::mprotect(p, size, PROT_READ);
}

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_data(other.m_data), m_size(other.m_size) {
    other.m_data = nullptr;
    other.m_size = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        reset();
        m_path = std::move(other.m_path);
        m_data = other.m_data;
        m_size = other.m_size;
        other.m_data = nullptr;
        other.m_size = 0;
    }
    return *this;
}

void MappedFile::reset() {
    if (m_data) ::munmap(const_cast<uint8_t*>(m_data), m_size);
    m_data = nullptr;
    m_size = 0;
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
    struct stat st {};
    const int fd = open_regular(path, st);
    FdCloser closer{fd};
    if (std::size_t(st.st_size) > max_bytes)
        throw_expected(ErrorCode::too_large, "'" + path + "' is " + std::to_string(st.st_size) +
                                                 " bytes, over the limit of " + std::to_string(max_bytes) +
                                                 " for a text file; is it the right file?");
    std::string text(std::size_t(st.st_size), '\0');
    read_all(fd, path, reinterpret_cast<uint8_t*>(text.data()), text.size());
    return text;
}

void write_text_file(const std::string& path, std::string_view text) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw_error(ErrorCode::io, "cannot write '" + tmp + "': " + std::strerror(errno));
        out.write(text.data(), std::streamsize(text.size()));
        if (!out) throw_error(ErrorCode::io, "write failed for '" + tmp + "'");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw_error(ErrorCode::io, "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
}

}  // namespace loradesk
