#include "src/io/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fastnn::io {
namespace {

// Bit-at-a-time CRC-32C straight from the definition (reflected polynomial
// 0x82F63B78, init and final xor 0xFFFFFFFF): the reference both fast paths
// are checked against.
uint32_t reference_crc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int b = 0; b < 8; ++b) {
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
  }
  return ~c;
}

uint32_t crc_of(const std::string& s) { return crc32c(s.data(), s.size()); }

TEST(Crc32cTest, StandardVectors) {
  EXPECT_EQ(crc_of("123456789"), 0xE3069283u);
  EXPECT_EQ(crc_of(std::string(32, '\0')), 0x8A9136AAu);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(crc_of(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
  }
  EXPECT_EQ(crc_of(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc_of(""), 0u);
}

TEST(Crc32cTest, PortableMatchesStandardVectors) {
  const char* s = "123456789";
  EXPECT_EQ(internal::crc32c_extend_portable(0, s, 9), 0xE3069283u);
  if (internal::crc32c_sse42_available()) {
    EXPECT_EQ(internal::crc32c_extend_sse42(0, s, 9), 0xE3069283u);
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "hello, tfrecord world";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t head = crc32c(s.data(), cut);
    EXPECT_EQ(crc32c_extend(head, s.data() + cut, s.size() - cut), crc_of(s)) << "cut " << cut;
  }
}

TEST(Crc32cTest, PathsAgreeOnRandomBuffersAndAlignments) {
  std::mt19937 rng(1234);
  std::vector<uint8_t> buffer(4096 + 16);
  for (auto& b : buffer) {
    b = static_cast<uint8_t>(rng());
  }
  const bool hw = internal::crc32c_sse42_available();
  if (!hw) {
    GTEST_LOG_(INFO) << "SSE4.2 not available; checking the portable path only";
  }
  for (size_t align = 0; align < 16; ++align) {
    for (size_t n :
         {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 255, 1000, 4095, 4096}) {
      const uint8_t* p = buffer.data() + align;
      uint32_t want = reference_crc32c(p, n);
      EXPECT_EQ(internal::crc32c_extend_portable(0, p, n), want) << "n " << n << " align " << align;
      if (hw) {
        EXPECT_EQ(internal::crc32c_extend_sse42(0, p, n), want) << "n " << n << " align " << align;
      }
      EXPECT_EQ(crc32c(p, n), want);
    }
  }
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    EXPECT_EQ(unmask_crc(mask_crc(c)), c);
    EXPECT_NE(mask_crc(c), c);
  }
  // ((0 >> 15) | (0 << 17)) + 0xa282ead8.
  EXPECT_EQ(mask_crc(0), 0xA282EAD8u);
}

}  // namespace
}  // namespace fastnn::io
