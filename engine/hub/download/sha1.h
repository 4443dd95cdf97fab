// SHA-1 (FIPS 180-4), incremental: only to check git blob ids, the ETags the Hub gives files kept in git
// itself. Not for anything that needs collision resistance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loradesk::hub {

class Sha1 {
  public:
    void update(const void* data, std::size_t n);
    std::string finish_hex();

  private:
    void block(const uint8_t* p);
    uint32_t m_h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    uint8_t m_buf[64] = {};
    std::size_t m_buf_len = 0;
    uint64_t m_total = 0;
};

}  // namespace loradesk::hub
