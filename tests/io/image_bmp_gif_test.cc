#include "src/io/image_bmp_gif.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fastnn/errors.h"
#include "src/io/image.h"

namespace fastnn::io {
namespace {

using Color = std::array<uint8_t, 3>;
using Pixels = std::vector<uint8_t>;

void put16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v & 0xFF));
  s->push_back(static_cast<char>((v >> 8) & 0xFF));
}

void put32(std::string* s, uint32_t v) {
  put16(s, v & 0xFFFF);
  put16(s, v >> 16);
}

std::string bytes_of(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

// The DataError message of decode (empty when it decodes).
template <typename Decode>
std::string error_of(Decode decode) {
  try {
    decode();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult has(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << message << "\" lacks \"" << part << "\"";
}

// Deterministic pseudo-random palette indices below n.
std::vector<uint8_t> noise(size_t count, uint32_t n, uint32_t seed) {
  std::vector<uint8_t> v(count);
  uint32_t x = seed;
  for (uint8_t& i : v) {
    x = x * 1103515245u + 12345u;
    i = static_cast<uint8_t>((x >> 16) % n);
  }
  return v;
}

// RGB pixels of colors[indices[i]].
Pixels colors_of(const std::vector<uint8_t>& indices, const std::vector<Color>& colors) {
  Pixels out;
  for (uint8_t i : indices) out.insert(out.end(), colors[i].begin(), colors[i].end());
  return out;
}

// ---- BMP writer ----

// What a test BMP holds besides its pixel rows.
struct BmpSpec {
  int32_t width = 0;
  int32_t height = 0;  // negative: rows top-down
  int bpp = 24;
  uint32_t compression = 0;
  uint32_t info_size = 40;
  std::vector<uint32_t> masks;  // after a 40-byte header, else inside the header at byte 40
  std::vector<Color> palette;   // RGB; written B, G, R, 0
  uint32_t colors_used = 0;
};

// A BMP of spec's headers, then `rows` as stored (first stored row first), each padded to 4
// bytes with 0x7F bytes that must not show in the pixels.
std::string write_bmp(const BmpSpec& spec, const std::vector<std::string>& rows) {
  std::string info;
  put32(&info, spec.info_size);
  put32(&info, static_cast<uint32_t>(spec.width));
  put32(&info, static_cast<uint32_t>(spec.height));
  put16(&info, 1);  // planes
  put16(&info, static_cast<uint32_t>(spec.bpp));
  put32(&info, spec.compression);
  put32(&info, 0);     // image size, may be 0 for uncompressed rows
  put32(&info, 2835);  // 72 dpi
  put32(&info, 2835);
  put32(&info, spec.colors_used);
  put32(&info, 0);  // colors important
  for (uint32_t m : spec.masks) put32(&info, m);
  if (spec.info_size > info.size()) info.resize(spec.info_size, '\0');
  std::string palette;
  for (const Color& c : spec.palette) {
    palette += bytes_of({c[2], c[1], c[0], 0});
  }
  std::string data;
  for (const std::string& row : rows) {
    data += row;
    data.append((4 - row.size() % 4) % 4, '\x7f');
  }
  const uint32_t offset = static_cast<uint32_t>(14 + info.size() + palette.size());
  std::string file = "BM";
  put32(&file, static_cast<uint32_t>(offset + data.size()));
  put32(&file, 0);  // reserved
  put32(&file, offset);
  return file + info + palette + data;
}

// 3x2 24-bit pixels: the top row (1,2,3) (4,5,6) (7,8,9), the bottom row (10,11,12) (13,14,15)
// (16,17,18), stored as B, G, R.
const std::string kTopRow = bytes_of({3, 2, 1, 6, 5, 4, 9, 8, 7});
const std::string kBottomRow = bytes_of({12, 11, 10, 15, 14, 13, 18, 17, 16});
const Pixels kPixels3x2 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};

std::string bmp24_3x2(bool top_down) {
  BmpSpec spec;
  spec.width = 3;
  spec.height = top_down ? -2 : 2;
  return write_bmp(spec, top_down ? std::vector<std::string>{kTopRow, kBottomRow}
                                  : std::vector<std::string>{kBottomRow, kTopRow});
}

TEST(ImageBmpTest, Sniff) {
  EXPECT_TRUE(is_bmp("BM\x10\x00"));
  EXPECT_FALSE(is_bmp("B"));
  EXPECT_FALSE(is_bmp("BA"));
  EXPECT_FALSE(is_bmp("GIF89a"));
}

TEST(ImageBmpTest, Bits24BottomUpAndTopDownSkipRowPadding) {
  for (bool top_down : {false, true}) {
    const std::string bmp = bmp24_3x2(top_down);
    EXPECT_TRUE(is_bmp(bmp));
    const ImageInfo info = bmp_info(bmp);
    EXPECT_EQ(info.format, ImageFormat::kBmp);
    EXPECT_EQ(info.height, 2);
    EXPECT_EQ(info.width, 3);
    EXPECT_EQ(info.channels, 3);
    for (int channels : {0, 3}) {
      const Image img = decode_bmp(bmp, channels);
      EXPECT_EQ(img.height, 2);
      EXPECT_EQ(img.width, 3);
      EXPECT_EQ(img.channels, 3);
      EXPECT_EQ(img.pixels, kPixels3x2) << "top_down " << top_down;
    }
  }
}

TEST(ImageBmpTest, Bits8GrayPalette) {
  BmpSpec spec;
  spec.width = 2;
  spec.height = 2;
  spec.bpp = 8;
  spec.palette = {{0, 0, 0}, {128, 128, 128}, {255, 255, 255}};
  spec.colors_used = 3;
  // Bottom row first: bottom 2 0, top 1 2.
  const std::string bmp = write_bmp(spec, {bytes_of({2, 0}), bytes_of({1, 2})});
  EXPECT_EQ(bmp_info(bmp).channels, 1);
  const Image gray = decode_bmp(bmp, 0);
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels, (Pixels{128, 255, 255, 0}));
  EXPECT_EQ(decode_bmp(bmp, 1).pixels, gray.pixels);
  const Image rgb = decode_bmp(bmp, 3);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.pixels, (Pixels{128, 128, 128, 255, 255, 255, 255, 255, 255, 0, 0, 0}));

  const std::string outside = write_bmp(spec, {bytes_of({2, 3}), bytes_of({1, 2})});
  EXPECT_TRUE(has(error_of([&] { decode_bmp(outside, 0); }), "palette index 3 of a 3-color"));
}

TEST(ImageBmpTest, Bits8And4ColorPalette) {
  BmpSpec spec;
  spec.width = 4;
  spec.height = 1;
  spec.bpp = 8;
  spec.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
  spec.colors_used = 4;
  const std::string bmp = write_bmp(spec, {bytes_of({3, 2, 1, 0})});
  EXPECT_EQ(bmp_info(bmp).channels, 3);
  const Image rgb = decode_bmp(bmp, 0);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.pixels, (Pixels{10, 20, 30, 0, 0, 255, 0, 255, 0, 255, 0, 0}));
  // decode_png's gray (see GrayMatchesPngPath) of (10,20,30), blue, green, red.
  const Image gray = decode_bmp(bmp, 1);
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels, (Pixels{21, 76, 219, 126}));

  // 4 bits: colors_used 0 means all 16 entries; the leftmost pixel is the high nibble, and the
  // unused low nibble of the last byte is ignored.
  BmpSpec spec4;
  spec4.width = 3;
  spec4.height = 1;
  spec4.bpp = 4;
  for (int i = 0; i < 16; ++i) {
    spec4.palette.push_back({uint8_t(i * 16), uint8_t(255 - i * 16), uint8_t(i)});
  }
  const Image img4 = decode_bmp(write_bmp(spec4, {bytes_of({0xF1, 0x8E})}), 0);
  EXPECT_EQ(img4.pixels, (Pixels{240, 15, 15, 16, 239, 1, 128, 127, 8}));
}

TEST(ImageBmpTest, Bits1) {
  BmpSpec spec;
  spec.width = 10;
  spec.height = -2;
  spec.bpp = 1;
  spec.palette = {{0, 0, 0}, {255, 255, 255}};
  // Row 0: 1011000110, row 1: 0100111001; the 6 bits after each row's 10 are set and ignored.
  const std::string bmp = write_bmp(spec, {bytes_of({0xB1, 0xBF}), bytes_of({0x4E, 0x7F})});
  EXPECT_EQ(bmp_info(bmp).channels, 1);
  const Image img = decode_bmp(bmp, 0);
  EXPECT_EQ(img.channels, 1);
  EXPECT_EQ(img.pixels, (Pixels{255, 0,   255, 255, 0,   0,   0,   255, 255, 0,  //
                                0,   255, 0,   0,   255, 255, 255, 0,   0,   255}));
}

TEST(ImageBmpTest, Bits32IgnoresAlpha) {
  BmpSpec spec;
  spec.width = 2;
  spec.height = 1;
  spec.bpp = 32;
  const Image img = decode_bmp(write_bmp(spec, {bytes_of({3, 2, 1, 0x80, 6, 5, 4, 0xFF})}), 0);
  EXPECT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixels, (Pixels{1, 2, 3, 4, 5, 6}));
}

TEST(ImageBmpTest, Bits16Are555) {
  BmpSpec spec;
  spec.width = 3;
  spec.height = 1;
  spec.bpp = 16;
  // 0x7C00: red 31. 0x860F: the unused top bit, red 1, green 16, blue 15. 0x03E0: green 31.
  // A 5-bit v scales to (v * 255 + 15) / 31.
  const std::string bmp = write_bmp(spec, {bytes_of({0x00, 0x7C, 0x0F, 0x86, 0xE0, 0x03})});
  const Image img = decode_bmp(bmp, 0);
  EXPECT_EQ(img.pixels, (Pixels{255, 0, 0, 8, 132, 123, 0, 255, 0}));
}

TEST(ImageBmpTest, BitFields) {
  // 32 bits, the masks after a 40-byte header: R, G, B in the top 3 bytes.
  BmpSpec spec;
  spec.width = 2;
  spec.height = 1;
  spec.bpp = 32;
  spec.compression = 3;
  spec.masks = {0xFF000000, 0x00FF0000, 0x0000FF00};
  const std::string rgbx = write_bmp(spec, {bytes_of({0x11, 3, 2, 1, 0x11, 252, 251, 250})});
  EXPECT_EQ(decode_bmp(rgbx, 0).pixels, (Pixels{1, 2, 3, 250, 251, 252}));

  // 16 bits 5-6-5, the masks inside a V4 header: white, green 32 of 63, red 16 and blue 1.
  BmpSpec v4;
  v4.width = 3;
  v4.height = 1;
  v4.bpp = 16;
  v4.compression = 3;
  v4.info_size = 108;
  v4.masks = {0xF800, 0x07E0, 0x001F, 0};
  const std::string rgb565 = write_bmp(v4, {bytes_of({0xFF, 0xFF, 0x00, 0x04, 0x01, 0x80})});
  EXPECT_EQ(decode_bmp(rgb565, 0).pixels, (Pixels{255, 255, 255, 0, 130, 0, 132, 0, 8}));

  // 32 bits 10-10-10 in a V5 header: (1023, 512, 0) and (0, 1, 1023).
  BmpSpec v5;
  v5.width = 2;
  v5.height = 1;
  v5.bpp = 32;
  v5.compression = 3;
  v5.info_size = 124;
  v5.masks = {0x3FF00000, 0x000FFC00, 0x000003FF, 0};
  const std::string rgb10 = write_bmp(v5, {bytes_of({0x00, 0x00, 0xF8, 0x3F, 0xFF, 0x07, 0, 0})});
  EXPECT_EQ(bmp_info(rgb10).channels, 3);
  EXPECT_EQ(decode_bmp(rgb10, 0).pixels, (Pixels{255, 128, 0, 0, 0, 255}));

  spec.masks = {0xF0F00000, 0x000F0000, 0x0000FF00};
  EXPECT_TRUE(has(error_of([&] { bmp_info(write_bmp(spec, {std::string(8, '\0')})); }),
                  "red mask 0xf0f00000 is not one run of bits"));
  v4.masks = {0x1F0000, 0x07E0, 0x001F};
  EXPECT_TRUE(
      has(error_of([&] { bmp_info(write_bmp(v4, {std::string(6, '\0')})); }), "exceeds 16 bits"));
}

TEST(ImageBmpTest, GrayMatchesPngPath) {
  // Every (r, g, b) step of 17, on 64 rows of 77 pixels, through the BMP and the PNG decoder.
  Image rgb;
  rgb.height = 64;
  rgb.width = 77;
  rgb.channels = 3;
  std::vector<std::string> rows;  // bottom-up
  for (int i = 0; i < 16 * 16 * 16 + 16; ++i) {
    const int v = std::min(i, 16 * 16 * 16 - 1);
    rgb.pixels.push_back(uint8_t(v / 256 * 17));
    rgb.pixels.push_back(uint8_t(v / 16 % 16 * 17));
    rgb.pixels.push_back(uint8_t(v % 16 * 17));
  }
  rgb.pixels.resize(64 * 77 * 3, 100);
  for (int y = 63; y >= 0; --y) {
    std::string row;
    for (int x = 0; x < 77; ++x) {
      const uint8_t* p = &rgb.pixels[(size_t(y) * 77 + x) * 3];
      row += bytes_of({p[2], p[1], p[0]});
    }
    rows.push_back(row);
  }
  BmpSpec spec;
  spec.width = 77;
  spec.height = 64;
  const Image bmp_gray = decode_bmp(write_bmp(spec, rows), 1);
  const Image png_gray = decode_image(encode_png(rgb), 1);
  ASSERT_EQ(png_gray.channels, 1);
  EXPECT_EQ(bmp_gray.channels, 1);
  EXPECT_EQ(bmp_gray.pixels, png_gray.pixels);
  EXPECT_EQ(decode_bmp(write_bmp(spec, rows), 0).pixels, rgb.pixels);
}

TEST(ImageBmpTest, RefusesBadFiles) {
  const std::string bmp = bmp24_3x2(false);
  // The last row's padding is part of the pixel data.
  EXPECT_TRUE(has(error_of([&] { decode_bmp(bmp.substr(0, bmp.size() - 1), 0); }),
                  "undecodable BMP: pixel rows truncated: 2 rows of 12 bytes at offset 54"));
  EXPECT_EQ(error_of([&] { decode_bmp(bmp, 0); }), "");
  EXPECT_TRUE(has(error_of([&] { bmp_info(bmp.substr(0, 30)); }), "info header truncated"));
  EXPECT_TRUE(has(error_of([&] { bmp_info(bmp.substr(0, 10)); }), "file header truncated"));
  EXPECT_TRUE(has(error_of([&] { bmp_info("PNG"); }), "no \"BM\" signature"));

  BmpSpec spec;
  spec.width = 2;
  spec.height = 2;
  spec.bpp = 8;
  spec.palette = {{0, 0, 0}, {9, 9, 9}};
  spec.colors_used = 2;
  spec.compression = 1;
  const std::vector<std::string> rle = {bytes_of({2, 1, 0, 1})};
  EXPECT_TRUE(has(error_of([&] { decode_bmp(write_bmp(spec, rle), 0); }),
                  "undecodable BMP: compression 1 (RLE8) is not decoded"));
  spec.bpp = 4;
  spec.compression = 2;
  EXPECT_TRUE(has(error_of([&] { bmp_info(write_bmp(spec, rle)); }), "compression 2 (RLE4)"));
  spec.bpp = 8;
  spec.compression = 0;
  spec.colors_used = 300;
  EXPECT_TRUE(has(error_of([&] { bmp_info(write_bmp(spec, rle)); }),
                  "palette of 300 colors at 8 bits per pixel"));
  spec.colors_used = 2;
  spec.info_size = 12;
  EXPECT_TRUE(has(error_of([&] { bmp_info(write_bmp(spec, rle)); }),
                  "OS/2 BITMAPCOREHEADER (12 bytes) is not decoded"));
  spec.info_size = 40;
  spec.bpp = 2;
  EXPECT_TRUE(
      has(error_of([&] { bmp_info(write_bmp(spec, rle)); }), "2 bits per pixel is not decoded"));
  spec.bpp = 24;
  spec.compression = 3;
  EXPECT_TRUE(
      has(error_of([&] { bmp_info(write_bmp(spec, rle)); }), "BI_BITFIELDS at 24 bits per pixel"));

  BmpSpec empty;
  empty.width = 0;
  empty.height = 2;
  EXPECT_TRUE(has(error_of([&] { bmp_info(write_bmp(empty, {})); }), "size 0x2 is empty"));
  BmpSpec huge;
  huge.width = 100000;
  huge.height = -100000;
  EXPECT_EQ(bmp_info(write_bmp(huge, {})).height, 100000);
  EXPECT_TRUE(has(error_of([&] { decode_bmp(write_bmp(huge, {}), 0); }),
                  "size 100000x-100000 is empty or too large"));
}

// ---- GIF writer ----

// Packs codes least significant bit first, as GIF does.
class BitWriter {
 public:
  void put(uint32_t code, int width) {
    acc_ |= uint64_t{code} << bits_;
    bits_ += width;
    while (bits_ >= 8) {
      out_.push_back(static_cast<char>(acc_ & 0xFF));
      acc_ >>= 8;
      bits_ -= 8;
    }
  }

  std::string finish() {
    if (bits_ > 0) out_.push_back(static_cast<char>(acc_ & 0xFF));
    acc_ = 0;
    bits_ = 0;
    return out_;
  }

 private:
  std::string out_;
  uint64_t acc_ = 0;
  int bits_ = 0;
};

struct LzwStats {
  int codes = 0;      // codes for pixels
  int max_width = 0;  // widest code written
  bool full = false;  // the table reached 4096 codes
};

// Test-only LZW encoder, as GIF encoders write: a clear code first; codes as wide as the
// decoder reads them (min_size + 1 bits, one more once the decoder's next code to define needs
// it, up to 12); an end code last. A full table is kept as it is (the "deferred clear") unless
// clear_when_full, which sends a clear code then.
std::string lzw_encode(const std::vector<uint8_t>& indices, int min_size,
                       bool clear_when_full = false, LzwStats* stats = nullptr) {
  const uint32_t clear = 1u << min_size, end = clear + 1;
  std::map<std::pair<uint32_t, uint8_t>, uint32_t> table;
  uint32_t next = end + 1;
  int width = min_size + 1;
  LzwStats local;
  LzwStats* s = stats != nullptr ? stats : &local;
  BitWriter w;
  auto put = [&](uint32_t code) {
    w.put(code, width);
    s->max_width = std::max(s->max_width, width);
  };
  put(clear);
  int64_t cur = -1;  // the code of the string matched so far
  for (uint8_t p : indices) {
    if (cur < 0) {
      cur = p;
      continue;
    }
    const auto key = std::make_pair(uint32_t(cur), p);
    auto it = table.find(key);
    if (it != table.end()) {
      cur = it->second;
      continue;
    }
    put(uint32_t(cur));
    ++s->codes;
    if (next < 4096) {
      table[key] = next++;
      if (next > (1u << width) && width < 12) ++width;
      if (next == 4096) s->full = true;
    } else if (clear_when_full) {
      put(clear);
      table.clear();
      next = end + 1;
      width = min_size + 1;
    }
    cur = p;
  }
  if (cur >= 0) {
    put(uint32_t(cur));
    ++s->codes;
    // The decoder defines a code on reading this one, which can widen the end code.
    if (next < 4096 && ++next > (1u << width) && width < 12) ++width;
  }
  put(end);
  return w.finish();
}

// data as sub-blocks of at most `block` bytes, then the empty block.
std::string sub_blocks(const std::string& data, size_t block = 255) {
  std::string out;
  for (size_t i = 0; i < data.size(); i += block) {
    const size_t n = std::min(block, data.size() - i);
    out.push_back(static_cast<char>(n));
    out.append(data, i, n);
  }
  out.push_back('\0');
  return out;
}

// log2 of a color table's size: the smallest power of 2 (at least 2) holding n colors.
int table_bits(size_t n) {
  int bits = 1;
  while ((size_t{1} << bits) < n) ++bits;
  return bits;
}

// A color table's bytes, padded with black to its power-of-2 size.
std::string table_bytes(const std::vector<Color>& colors) {
  std::string out;
  for (size_t i = 0; i < (size_t{1} << table_bits(colors.size())); ++i) {
    const Color c = i < colors.size() ? colors[i] : Color{0, 0, 0};
    out += bytes_of({c[0], c[1], c[2]});
  }
  return out;
}

// GIF89a, a logical screen of width x height with a global color table (none when empty), then
// `blocks` (extensions and frames) and the trailer.
std::string write_gif(int width, int height, const std::vector<Color>& global,
                      const std::string& blocks) {
  std::string out = "GIF89a";
  put16(&out, uint32_t(width));
  put16(&out, uint32_t(height));
  if (global.empty()) {
    out += bytes_of({0, 0, 0});
  } else {
    out += bytes_of({0x80 | (table_bits(global.size()) - 1), 0, 0});
    out += table_bytes(global);
  }
  return out + blocks + ";";
}

struct FrameSpec {
  int left = 0, top = 0, width = 0, height = 0;
  std::vector<uint8_t> indices;  // row by row, top to bottom
  int min_size = 2;
  std::vector<Color> local;  // none when empty
  bool interlaced = false;
  bool clear_when_full = false;
};

// An image descriptor, its local color table and its LZW data.
std::string write_frame(const FrameSpec& f, LzwStats* stats = nullptr) {
  std::string out = ",";
  put16(&out, uint32_t(f.left));
  put16(&out, uint32_t(f.top));
  put16(&out, uint32_t(f.width));
  put16(&out, uint32_t(f.height));
  int flags = f.interlaced ? 0x40 : 0;
  if (!f.local.empty()) flags |= 0x80 | (table_bits(f.local.size()) - 1);
  out += bytes_of({flags});
  if (!f.local.empty()) out += table_bytes(f.local);
  std::vector<uint8_t> stream;
  if (f.interlaced) {
    const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass) {
      for (int y = start[pass]; y < f.height; y += step[pass]) {
        const auto row = f.indices.begin() + size_t(y) * f.width;
        stream.insert(stream.end(), row, row + f.width);
      }
    }
  } else {
    stream = f.indices;
  }
  out += bytes_of({f.min_size});
  out += sub_blocks(lzw_encode(stream, f.min_size, f.clear_when_full, stats));
  return out;
}

// A Graphic Control Extension with transparent index `transparent`, or none when negative.
std::string control_extension(int transparent) {
  return bytes_of({0x21, 0xF9, 4, transparent >= 0 ? 1 : 0, 0, 0, std::max(transparent, 0), 0});
}

// A frame covering a width x height screen.
FrameSpec full_frame(int width, int height, std::vector<uint8_t> indices, int min_size) {
  FrameSpec f;
  f.width = width;
  f.height = height;
  f.indices = std::move(indices);
  f.min_size = min_size;
  return f;
}

std::vector<Color> ramp_colors(int n) {
  std::vector<Color> colors;
  for (int i = 0; i < n; ++i) colors.push_back({uint8_t(i), uint8_t(255 - i), uint8_t(i * 7)});
  return colors;
}

TEST(ImageGifTest, SniffAndInfo) {
  EXPECT_TRUE(is_gif("GIF87a"));
  EXPECT_TRUE(is_gif("GIF89a\x01"));
  EXPECT_FALSE(is_gif("GIF88a"));
  EXPECT_FALSE(is_gif("GIF89"));
  FrameSpec f = full_frame(2, 1, {0, 1}, 2);
  const ImageInfo info = gif_info(write_gif(5, 4, ramp_colors(4), write_frame(f)));
  EXPECT_EQ(info.format, ImageFormat::kGif);
  EXPECT_EQ(info.height, 4);
  EXPECT_EQ(info.width, 5);
  EXPECT_EQ(info.channels, 3);
  EXPECT_TRUE(has(error_of([&] { gif_info(write_gif(0, 4, {}, "")); }), "size 0x4 is empty"));
  EXPECT_TRUE(
      has(error_of([&] { gif_info("GIF89a\x05\x00"); }), "logical screen descriptor truncated"));
  EXPECT_TRUE(has(error_of([&] { gif_info("BM"); }), "no GIF87a or GIF89a signature"));
}

// The 10x10 example of "What's in a GIF" (Matthew Flickinger), as a real encoder wrote it:
// global colors white, red, blue, black; a Graphic Control Extension without transparency.
TEST(ImageGifTest, DecodesKnownFile) {
  const std::string gif =
      bytes_of({0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x0A, 0x00, 0x0A, 0x00, 0x91, 0x00, 0x00, 0xFF,
                0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00, 0x21, 0xF9, 0x04,
                0x00, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00, 0x0A, 0x00, 0x0A, 0x00,
                0x00, 0x02, 0x16, 0x8C, 0x2D, 0x99, 0x87, 0x2A, 0x1C, 0xDC, 0x33, 0xA0, 0x02, 0x75,
                0xEC, 0x95, 0xFA, 0xA8, 0xDE, 0x60, 0x8C, 0x04, 0x91, 0x4C, 0x01, 0x00, 0x3B});
  const std::vector<uint8_t> indices = {1, 1, 1, 1, 1, 2, 2, 2, 2, 2,  //
                                        1, 1, 1, 1, 1, 2, 2, 2, 2, 2,  //
                                        1, 1, 1, 1, 1, 2, 2, 2, 2, 2,  //
                                        1, 1, 1, 0, 0, 0, 0, 2, 2, 2,  //
                                        1, 1, 1, 0, 0, 0, 0, 2, 2, 2,  //
                                        2, 2, 2, 0, 0, 0, 0, 1, 1, 1,  //
                                        2, 2, 2, 0, 0, 0, 0, 1, 1, 1,  //
                                        2, 2, 2, 2, 2, 1, 1, 1, 1, 1,  //
                                        2, 2, 2, 2, 2, 1, 1, 1, 1, 1,  //
                                        2, 2, 2, 2, 2, 1, 1, 1, 1, 1};
  const std::vector<Color> colors = {{255, 255, 255}, {255, 0, 0}, {0, 0, 255}, {0, 0, 0}};
  EXPECT_TRUE(is_gif(gif));
  const Image img = decode_gif(gif, 0);
  EXPECT_EQ(img.height, 10);
  EXPECT_EQ(img.width, 10);
  EXPECT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixels, colors_of(indices, colors));
}

TEST(ImageGifTest, HandMadeLzwStream) {
  // 2x2 of indices 0 1 / 1 0, minimum code size 2: clear (4) and 0, 1, 1 in 3 bits; after the
  // second 1 the next code to define is 8, so 0 and the end code (5) take 4 bits.
  const std::string stream = bytes_of({0x44, 0x02, 0x05});
  EXPECT_EQ(lzw_encode({0, 1, 1, 0}, 2), stream);
  const std::string gif = bytes_of({'G',  'I', 'F',  '8',  '7',  'a', 2,   0, 2, 0, 0x80, 0, 0,  //
                                    10,   20,  30,   200,  100,  50,                             //
                                    0x2C, 0,   0,    0,    0,    2,   0,   2, 0, 0,              //
                                    2,    3,   0x44, 0x02, 0x05, 0,   0x3B});
  const Image img = decode_gif(gif, 0);
  EXPECT_EQ(img.pixels, (Pixels{10, 20, 30, 200, 100, 50, 200, 100, 50, 10, 20, 30}));
}

TEST(ImageGifTest, CodesWidenPast9Bits) {
  const std::vector<Color> colors = ramp_colors(256);
  const FrameSpec f = full_frame(24, 16, noise(24 * 16, 256, 1), 8);
  LzwStats stats;
  const std::string gif = write_gif(24, 16, colors, write_frame(f, &stats));
  EXPECT_GE(stats.max_width, 10);
  const Image img = decode_gif(gif, 0);
  EXPECT_EQ(img.height, 16);
  EXPECT_EQ(img.width, 24);
  EXPECT_EQ(img.pixels, colors_of(f.indices, colors));
}

TEST(ImageGifTest, FullTableWithAndWithoutClear) {
  for (int min_size : {2, 8}) {
    for (bool clear_when_full : {false, true}) {
      const int n = 1 << min_size;
      const std::vector<Color> colors = ramp_colors(n);
      FrameSpec f = full_frame(200, 150, noise(200 * 150, uint32_t(n), 2), min_size);
      f.clear_when_full = clear_when_full;
      LzwStats stats;
      const std::string gif = write_gif(200, 150, colors, write_frame(f, &stats));
      EXPECT_TRUE(stats.full);
      EXPECT_GT(stats.codes, 4096 + 100);
      EXPECT_EQ(stats.max_width, 12);
      const Image img = decode_gif(gif, 0);
      EXPECT_EQ(img.pixels, colors_of(f.indices, colors))
          << "min_size " << min_size << " clear_when_full " << clear_when_full;
    }
  }
}

TEST(ImageGifTest, Interlaced) {
  // 11 rows: every pass has rows; each row's indices differ.
  std::vector<uint8_t> indices;
  for (int y = 0; y < 11; ++y) {
    for (int x = 0; x < 3; ++x) indices.push_back(uint8_t((y * 3 + x) % 16));
  }
  FrameSpec f = full_frame(3, 11, indices, 4);
  f.interlaced = true;
  const std::vector<Color> colors = ramp_colors(16);
  const Image img = decode_gif(write_gif(3, 11, colors, write_frame(f)), 0);
  EXPECT_EQ(img.pixels, colors_of(indices, colors));
}

TEST(ImageGifTest, LocalTableExtensionsAndLaterFrames) {
  const std::vector<Color> global = {{1, 1, 1}, {2, 2, 2}};
  FrameSpec f = full_frame(3, 2, {0, 1, 2, 2, 1, 0}, 2);
  f.local = {{200, 0, 0}, {0, 200, 0}, {0, 0, 200}};
  // A comment of two sub-blocks and a NETSCAPE2.0 looping extension, before the frame.
  const std::string comment = "\x21\xFE" + sub_blocks(std::string(300, 'c'));
  const std::string looping =
      bytes_of({0x21, 0xFF, 11}) + "NETSCAPE2.0" + bytes_of({3, 1, 0, 0, 0});
  FrameSpec second = full_frame(3, 2, {1, 1, 1, 1, 1, 1}, 2);
  const std::string gif =
      write_gif(3, 2, global, comment + looping + write_frame(f) + write_frame(second));
  const Image img = decode_gif(gif, 0);
  EXPECT_EQ(img.pixels, colors_of(f.indices, f.local));
}

TEST(ImageGifTest, TransparentIndexStaysBlack) {
  const std::vector<Color> colors = {{50, 60, 70}, {80, 90, 100}, {110, 120, 130}};
  const FrameSpec f = full_frame(3, 1, {0, 1, 2}, 2);
  const Image img = decode_gif(write_gif(3, 1, colors, control_extension(1) + write_frame(f)), 0);
  EXPECT_EQ(img.pixels, (Pixels{50, 60, 70, 0, 0, 0, 110, 120, 130}));
  // Index 1 without the transparency flag is a color.
  const std::string flag_off = bytes_of({0x21, 0xF9, 4, 0, 0, 0, 1, 0});
  EXPECT_EQ(decode_gif(write_gif(3, 1, colors, flag_off + write_frame(f)), 0).pixels,
            colors_of(f.indices, colors));
  // As giflib (TensorFlow's decoder): the first control extension counts.
  EXPECT_EQ(decode_gif(write_gif(3, 1, colors, flag_off + control_extension(1) + write_frame(f)), 0)
                .pixels,
            colors_of(f.indices, colors));
  // A transparent index outside the (2-color) table is not an error.
  const std::vector<Color> two = {colors[0], colors[1]};
  const FrameSpec outside = full_frame(3, 1, {3, 0, 3}, 2);
  EXPECT_EQ(decode_gif(write_gif(3, 1, two, control_extension(3) + write_frame(outside)), 0).pixels,
            (Pixels{0, 0, 0, 50, 60, 70, 0, 0, 0}));
}

TEST(ImageGifTest, FrameAtAnOffsetAndClipped) {
  const std::vector<Color> colors = {{255, 0, 0}, {0, 0, 255}};
  FrameSpec f = full_frame(2, 2, {0, 1, 1, 0}, 2);
  f.left = 2;
  f.top = 1;
  const Image img = decode_gif(write_gif(5, 4, colors, write_frame(f)), 0);
  ASSERT_EQ(img.height, 4);
  ASSERT_EQ(img.width, 5);
  Pixels want(4 * 5 * 3, 0);
  auto set = [&](int y, int x, const Color& c) {
    std::copy(c.begin(), c.end(), want.begin() + (y * 5 + x) * 3);
  };
  set(1, 2, colors[0]);
  set(1, 3, colors[1]);
  set(2, 2, colors[1]);
  set(2, 3, colors[0]);
  EXPECT_EQ(img.pixels, want);

  // Only the frame's top-left pixel is on the 3x3 screen; the rest is clipped.
  FrameSpec corner = full_frame(2, 2, {1, 0, 0, 0}, 2);
  corner.left = 2;
  corner.top = 2;
  Pixels want3(3 * 3 * 3, 0);
  std::copy(colors[1].begin(), colors[1].end(), want3.begin() + (2 * 3 + 2) * 3);
  EXPECT_EQ(decode_gif(write_gif(3, 3, colors, write_frame(corner)), 0).pixels, want3);
  corner.left = 10;
  EXPECT_EQ(decode_gif(write_gif(3, 3, colors, write_frame(corner)), 0).pixels, Pixels(27, 0));
}

TEST(ImageGifTest, ForcedChannels) {
  const std::vector<Color> colors = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
  FrameSpec f = full_frame(2, 2, {0, 1, 2, 3}, 2);
  f.left = 1;  // the screen's first column stays black
  const std::string gif = write_gif(3, 2, colors, write_frame(f));
  const Pixels rgb = {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 255, 10, 20, 30};
  EXPECT_EQ(decode_gif(gif, 0).pixels, rgb);
  const Image forced_rgb = decode_gif(gif, 3);
  EXPECT_EQ(forced_rgb.channels, 3);
  EXPECT_EQ(forced_rgb.pixels, rgb);
  // decode_png's gray of red, green, blue and (10,20,30).
  const Image gray = decode_gif(gif, 1);
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels, (Pixels{0, 126, 219, 0, 76, 21}));
}

TEST(ImageGifTest, RefusesBadData) {
  const std::vector<Color> colors = ramp_colors(256);
  const FrameSpec big = full_frame(24, 16, noise(24 * 16, 256, 1), 8);
  const std::string gif = write_gif(24, 16, colors, write_frame(big));
  EXPECT_EQ(error_of([&] { decode_gif(gif, 0); }), "");
  EXPECT_TRUE(has(error_of([&] { decode_gif(gif.substr(0, gif.size() - 100), 0); }),
                  "undecodable GIF: frame data ends early"));
  EXPECT_TRUE(
      has(error_of([&] { decode_gif(gif.substr(0, 500), 0); }), "global color table truncated"));

  // The end code after 3 of 4 pixels.
  const std::vector<Color> four = ramp_colors(4);
  const std::string header = write_gif(2, 2, four, "");
  const std::string head = header.substr(0, header.size() - 1);  // without the trailer
  const std::string descriptor = bytes_of({0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0});
  const std::string short_data = descriptor + bytes_of({2}) + sub_blocks(lzw_encode({0, 1, 1}, 2));
  EXPECT_TRUE(has(error_of([&] { decode_gif(head + short_data + ";", 0); }),
                  "frame data ends early (3 of 4 pixels)"));
  // No sub-blocks at all.
  EXPECT_TRUE(has(error_of([&] {
                    decode_gif(head + descriptor + bytes_of({2, 0}) + ";", 0);
                  }),
                  "frame data ends early (0 of 4 pixels)"));
  // Clear (4), 0, then 7 while the next code to define is 6; all in 3 bits.
  EXPECT_TRUE(has(error_of([&] {
                    decode_gif(head + descriptor + bytes_of({2, 2, 0xC4, 0x01, 0}) + ";", 0);
                  }),
                  "LZW code 7 before it is defined (next is 6)"));
  // Clear (4), then 6, which no pixel precedes.
  EXPECT_TRUE(has(error_of([&] {
                    decode_gif(head + descriptor + bytes_of({2, 1, 0x34, 0}) + ";", 0);
                  }),
                  "LZW code 6 where a pixel must follow"));
  for (int size : {1, 9}) {
    EXPECT_TRUE(has(error_of([&] {
                      decode_gif(head + descriptor + bytes_of({size, 1, 0, 0}) + ";", 0);
                    }),
                    "LZW minimum code size " + std::to_string(size) + " is not in 2..8"));
  }
  // Index 3 of a 2-color table.
  const std::string two =
      write_gif(2, 2, {{1, 2, 3}, {4, 5, 6}}, write_frame(full_frame(2, 2, {0, 3, 0, 0}, 2)));
  EXPECT_TRUE(has(error_of([&] { decode_gif(two, 0); }), "color index 3 of a 2-color table"));
  EXPECT_TRUE(
      has(error_of([&] {
            decode_gif(write_gif(2, 2, {}, write_frame(full_frame(2, 2, {0, 0, 0, 0}, 2))), 0);
          }),
          "no color table for the first frame"));
  EXPECT_TRUE(has(error_of([&] { decode_gif(write_gif(2, 2, four, ""), 0); }),
                  "no image before the trailer"));
  EXPECT_TRUE(has(error_of([&] { decode_gif(head + "\x99", 0); }), "unknown block type 0x99"));
  EXPECT_TRUE(has(error_of([&] {
                    decode_gif(head +
                                   "\x21\xFE\x05"
                                   "ab",
                               0);
                  }),
                  "extension truncated"));
  EXPECT_TRUE(has(error_of([&] {
                    decode_gif(head + bytes_of({0x2C, 0, 0}), 0);
                  }),
                  "image descriptor truncated"));
}

}  // namespace
}  // namespace fastnn::io
