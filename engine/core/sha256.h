// SHA-256 (FIPS 180-4), incremental. Used for adapter identity digests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loradesk {

class Sha256 {
  public:
    Sha256();
    void update(const void* data, std::size_t n);
    void update(std::string_view s) { update(s.data(), s.size()); }
    std::array<uint8_t, 32> finish();
    std::string finish_hex();

  private:
    void block(const uint8_t* p);
    uint32_t m_h[8];
    uint8_t m_buf[64];
    std::size_t m_buf_len = 0;
    uint64_t m_total = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace loradesk
