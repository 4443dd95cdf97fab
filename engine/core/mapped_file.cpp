#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace loradesk {

MappedFile::MappedFile(const std::string& path) : m_path(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        throw_expected(err == ENOENT ? ErrorCode::not_found : ErrorCode::io,
                       "cannot open '" + path + "': " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw_error(ErrorCode::io, "cannot stat '" + path + "': " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw_expected(ErrorCode::invalid_argument, "'" + path + "' is a directory, expected a file");
    }
    m_size = std::size_t(st.st_size);
    if (m_size > 0) {
        void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            throw_error(ErrorCode::io, "cannot map '" + path + "': " + std::strerror(err));
        }
        m_data = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
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

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        struct stat st {};
        bool exists = ::stat(path.c_str(), &st) == 0;
        throw_expected(exists ? ErrorCode::io : ErrorCode::not_found,
                       "cannot read '" + path + "'" + (exists ? ": permission denied or unreadable" : ": no such file"));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
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
