#include "hub/download/sha1.h"

#include <cstring>

namespace loradesk::hub {

namespace {
uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
}  // namespace

void Sha1::block(const uint8_t* p) {
    uint32_t w[80];
    for (int i = 0; i < 16; ++i)
        w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; ++i) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3], e = m_h[4];
    for (int i = 0; i < 80; ++i) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d), k = 0x5A827999u;
        } else if (i < 40) {
            f = b ^ c ^ d, k = 0x6ED9EBA1u;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
        } else {
            f = b ^ c ^ d, k = 0xCA62C1D6u;
        }
        const uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol(b, 30), b = a, a = t;
    }
    m_h[0] += a, m_h[1] += b, m_h[2] += c, m_h[3] += d, m_h[4] += e;
}

void Sha1::update(const void* data, std::size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    m_total += n;
    while (n > 0) {
        const std::size_t take = std::min(n, 64 - m_buf_len);
        std::memcpy(m_buf + m_buf_len, p, take);
        m_buf_len += take, p += take, n -= take;
        if (m_buf_len == 64) {
            block(m_buf);
            m_buf_len = 0;
        }
    }
}

std::string Sha1::finish_hex() {
    const uint64_t bits = m_total * 8;
    const uint8_t pad = 0x80, zero = 0;
    update(&pad, 1);
    while (m_buf_len != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (uint32_t h : m_h)
        for (int i = 28; i >= 0; i -= 4) out += kHex[(h >> i) & 15];
    return out;
}

}  // namespace loradesk::hub
