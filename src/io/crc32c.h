// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and the TFRecord
// CRC mask. Uses the SSE4.2 crc32 instruction when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastnn::io {

/// CRC-32C of data[0, n) appended to a stream whose CRC so far is `crc`
/// (0 for an empty stream): crc32c_extend(crc32c(a), b) == crc32c(a + b).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

/// CRC-32C of data[0, n); crc32c("123456789", 9) == 0xE3069283.
uint32_t crc32c(const void* data, size_t n);

/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc(uint32_t crc);

/// Inverse of mask_crc.
uint32_t unmask_crc(uint32_t masked);

namespace internal {

/// Table-driven (slicing-by-8) implementation; same contract as
/// crc32c_extend. Exposed so tests can compare the two paths.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);

/// True when the running CPU has SSE4.2 and crc32c_extend_sse42 may be called.
bool crc32c_sse42_available();

/// Hardware implementation. REQUIRES: crc32c_sse42_available().
uint32_t crc32c_extend_sse42(uint32_t crc, const void* data, size_t n);

}  // namespace internal
}  // namespace fastnn::io
