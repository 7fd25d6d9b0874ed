#include "src/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define FASTNN_CRC32C_X86 1
#endif

namespace fastnn::io {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected 0x1EDC6F41
constexpr uint32_t kMaskDelta = 0xa282ead8u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[0] is the classic byte-at-a-time table; tables[k][b] is the CRC of
// byte b followed by k zero bytes, which lets eight bytes be folded at once.
constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) {
      c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    }
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t prev = t[k - 1][b];
      t[k][b] = (prev >> 8) ^ t[0][prev & 0xFF];
    }
  }
  return t;
}

constexpr Tables kTables = make_tables();

uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFn choose_extend() {
  return internal::crc32c_sse42_available() ? internal::crc32c_extend_sse42
                                            : internal::crc32c_extend_portable;
}

}  // namespace

namespace internal {

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t v = load_le64(p) ^ c;
    c = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
        kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^ kTables[2][(v >> 40) & 0xFF] ^
        kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  }
  return ~c;
}

#ifdef FASTNN_CRC32C_X86

bool crc32c_sse42_available() { return __builtin_cpu_supports("sse4.2"); }

__attribute__((target("sse4.2"))) uint32_t crc32c_extend_sse42(uint32_t crc, const void* data,
                                                               size_t remaining) {
  const auto* cursor = static_cast<const uint8_t*>(data);
  uint32_t state = ~crc;
  while (remaining > 0 && (reinterpret_cast<uintptr_t>(cursor) & 7) != 0) {
    state = _mm_crc32_u8(state, *cursor++);
    --remaining;
  }
#if defined(__x86_64__)
  uint64_t c64 = state;
  while (remaining >= 8) {
    uint64_t word;
    std::memcpy(&word, cursor, sizeof(word));
    c64 = _mm_crc32_u64(c64, word);
    cursor += 8;
    remaining -= 8;
  }
  state = static_cast<uint32_t>(c64);
#endif
  while (remaining >= 4) {
    uint32_t word;
    std::memcpy(&word, cursor, sizeof(word));
    state = _mm_crc32_u32(state, word);
    cursor += 4;
    remaining -= 4;
  }
  while (remaining-- > 0) {
    state = _mm_crc32_u8(state, *cursor++);
  }
  return ~state;
}

#else

bool crc32c_sse42_available() { return false; }

uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n) {
  return crc32c_extend_portable(crc, data, n);
}

#endif

}  // namespace internal

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  static const ExtendFn extend = choose_extend();
  return extend(crc, data, n);
}

uint32_t crc32c(const void* data, size_t n) { return crc32c_extend(0, data, n); }

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace fastnn::io
