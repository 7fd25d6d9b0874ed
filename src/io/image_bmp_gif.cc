#include "src/io/image_bmp_gif.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastnn/errors.h"
#include "src/io/image_limits.h"

namespace fastnn::io {
namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", v);
  return buf;
}

uint8_t byte_at(std::string_view b, size_t at) { return static_cast<uint8_t>(b[at]); }

uint32_t le16(std::string_view b, size_t at) {
  return uint32_t{byte_at(b, at)} | (uint32_t{byte_at(b, at + 1)} << 8);
}

uint32_t le32(std::string_view b, size_t at) { return le16(b, at) | (le16(b, at + 2) << 16); }

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// libpng's 8-bit gamma tables for a PNG without a gAMA chunk (read as gamma 1/2.2), written
// out so that no libm's pow() rounds an entry differently:
//   kToLinear[v] = floor(255 * (v / 255)^2.19998 + 0.5),
//   kFromLinear[v] = floor(255 * (v / 255)^0.45455 + 0.5), 0 and 255 kept.
constexpr uint8_t kToLinear[256] = {
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   1,   1,   1,   1,
    1,   1,   1,   1,   1,   1,   2,   2,   2,   2,   2,   2,   2,   3,   3,   3,   3,   3,   4,
    4,   4,   4,   5,   5,   5,   5,   6,   6,   6,   6,   7,   7,   7,   8,   8,   8,   9,   9,
    9,   10,  10,  11,  11,  11,  12,  12,  13,  13,  13,  14,  14,  15,  15,  16,  16,  17,  17,
    18,  18,  19,  19,  20,  20,  21,  22,  22,  23,  23,  24,  25,  25,  26,  26,  27,  28,  28,
    29,  30,  30,  31,  32,  33,  33,  34,  35,  35,  36,  37,  38,  39,  39,  40,  41,  42,  43,
    43,  44,  45,  46,  47,  48,  49,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,
    61,  62,  63,  64,  65,  66,  67,  68,  69,  70,  71,  73,  74,  75,  76,  77,  78,  79,  81,
    82,  83,  84,  85,  87,  88,  89,  90,  91,  93,  94,  95,  97,  98,  99,  100, 102, 103, 105,
    106, 107, 109, 110, 111, 113, 114, 116, 117, 119, 120, 121, 123, 124, 126, 127, 129, 130, 132,
    133, 135, 137, 138, 140, 141, 143, 145, 146, 148, 149, 151, 153, 154, 156, 158, 159, 161, 163,
    165, 166, 168, 170, 172, 173, 175, 177, 179, 181, 182, 184, 186, 188, 190, 192, 194, 196, 197,
    199, 201, 203, 205, 207, 209, 211, 213, 215, 217, 219, 221, 223, 225, 227, 229, 231, 234, 236,
    238, 240, 242, 244, 246, 248, 251, 253, 255,
};
constexpr uint8_t kFromLinear[256] = {
    0,   21,  28,  34,  39,  43,  46,  50,  53,  56,  59,  61,  64,  66,  68,  70,  72,  74,  76,
    78,  80,  82,  84,  85,  87,  89,  90,  92,  93,  95,  96,  98,  99,  101, 102, 103, 105, 106,
    107, 109, 110, 111, 112, 114, 115, 116, 117, 118, 119, 120, 122, 123, 124, 125, 126, 127, 128,
    129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 144, 145, 146,
    147, 148, 149, 150, 151, 151, 152, 153, 154, 155, 156, 156, 157, 158, 159, 160, 160, 161, 162,
    163, 164, 164, 165, 166, 167, 167, 168, 169, 170, 170, 171, 172, 173, 173, 174, 175, 175, 176,
    177, 178, 178, 179, 180, 180, 181, 182, 182, 183, 184, 184, 185, 186, 186, 187, 188, 188, 189,
    190, 190, 191, 192, 192, 193, 194, 194, 195, 195, 196, 197, 197, 198, 199, 199, 200, 200, 201,
    202, 202, 203, 203, 204, 205, 205, 206, 206, 207, 207, 208, 209, 209, 210, 210, 211, 212, 212,
    213, 213, 214, 214, 215, 215, 216, 217, 217, 218, 218, 219, 219, 220, 220, 221, 221, 222, 223,
    223, 224, 224, 225, 225, 226, 226, 227, 227, 228, 228, 229, 229, 230, 230, 231, 231, 232, 232,
    233, 233, 234, 234, 235, 235, 236, 236, 237, 237, 238, 238, 239, 239, 240, 240, 241, 241, 242,
    242, 243, 243, 244, 244, 245, 245, 246, 246, 247, 247, 248, 248, 249, 249, 249, 250, 250, 251,
    251, 252, 252, 253, 253, 254, 254, 255, 255,
};

// Gray as decode_png makes it (png_image_finish_read to PNG_FORMAT_GRAY sets
// png_set_rgb_to_gray_fixed(PNG_ERROR_ACTION_NONE, -1, -1)): a gray color passes unchanged, any
// other is kFromLinear[(6968 * R + 23434 * G + 2366 * B + 16384) >> 15] with R, G, B =
// kToLinear of r, g, b. Equal to libpng 1.6.39's output for all 2^24 colors, with and without
// an sRGB chunk (encode_png writes one).
uint8_t gray_of(Rgb c) {
  if (c.r == c.g && c.g == c.b) return c.r;
  const uint32_t y = 6968 * uint32_t{kToLinear[c.r]} + 23434 * uint32_t{kToLinear[c.g]} +
                     2366 * uint32_t{kToLinear[c.b]};
  return kFromLinear[(y + 16384) >> 15];
}

// Writes c as 1 (gray) or 3 (RGB) channels.
void put_pixel(uint8_t* p, int channels, Rgb c) {
  if (channels == 1) {
    p[0] = gray_of(c);
  } else {
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
  }
}

// ---- BMP ----

[[noreturn]] void bmp_fail(const std::string& why) { throw DataError("undecodable BMP: " + why); }

std::string truncated(const char* what, std::string_view b) {
  return std::string(what) + " truncated (the file has " + std::to_string(b.size()) + " bytes)";
}

// One color of a 16- or 32-bit pixel: (pixel & mask) >> shift, at most max.
struct BitField {
  uint32_t mask = 0;
  int shift = 0;
  uint64_t max = 0;  // 0 for an empty mask: the color is 0
};

BitField bit_field(uint32_t mask, int bpp, const char* color) {
  BitField f;
  f.mask = mask;
  if (mask == 0) return f;
  if (bpp == 16 && mask > 0xFFFF) {
    bmp_fail(std::string(color) + " mask " + hex(mask) + " exceeds 16 bits per pixel");
  }
  while (((mask >> f.shift) & 1) == 0) ++f.shift;
  f.max = uint64_t{mask} >> f.shift;
  if ((f.max & (f.max + 1)) != 0) {
    bmp_fail(std::string(color) + " mask " + hex(mask) + " is not one run of bits");
  }
  return f;
}

// Scales a field to 0..255, rounding to nearest.
uint8_t field_value(uint32_t pixel, const BitField& f) {
  if (f.max == 0) return 0;
  const uint64_t v = (pixel & f.mask) >> f.shift;
  return static_cast<uint8_t>((v * 255 + f.max / 2) / f.max);
}

struct BmpHeader {
  int64_t width = 0;
  int64_t height = 0;  // positive: rows stored bottom-up; negative: top-down
  int bpp = 0;
  uint64_t pixel_offset = 0;
  BitField fields[3];        // red, green, blue at 16 and 32 bits per pixel
  std::vector<Rgb> palette;  // at 8 bits per pixel or less
  bool gray = false;         // a palette of gray entries only
};

const char* compression_name(uint32_t compression) {
  switch (compression) {
    case 1:
      return " (RLE8)";
    case 2:
      return " (RLE4)";
    case 4:
      return " (JPEG)";
    case 5:
      return " (PNG)";
    case 6:
      return " (ALPHABITFIELDS)";
    default:
      return "";
  }
}

// BITMAPFILEHEADER (14 bytes: "BM", file size, 2 reserved words, offset of the pixel rows), then
// an info header that starts with its own size: width and height (int32), planes, bits per
// pixel, compression, image size, resolutions, colors used, colors important (40 bytes); larger
// ones then hold the red, green, blue (and alpha) masks at byte 40.
BmpHeader parse_bmp(std::string_view b) {
  if (!is_bmp(b)) bmp_fail("no \"BM\" signature");
  if (b.size() < 18) bmp_fail(truncated("file header", b));
  const uint32_t info_size = le32(b, 14);
  if (info_size == 12) bmp_fail("OS/2 BITMAPCOREHEADER (12 bytes) is not decoded");
  if (info_size != 40 && info_size != 52 && info_size != 56 && info_size != 108 &&
      info_size != 124) {
    bmp_fail("info header of " + std::to_string(info_size) + " bytes is not decoded");
  }
  if (b.size() < 14 + uint64_t{info_size}) bmp_fail(truncated("info header", b));
  BmpHeader h;
  h.pixel_offset = le32(b, 10);
  h.width = static_cast<int32_t>(le32(b, 18));
  h.height = static_cast<int32_t>(le32(b, 22));
  h.bpp = static_cast<int>(le16(b, 28));
  const uint32_t compression = le32(b, 30);
  const uint32_t colors_used = le32(b, 46);
  if (h.width <= 0 || h.height == 0) bmp_fail(image_size_error(h.width, h.height));
  uint64_t palette_at = 14 + uint64_t{info_size};
  uint32_t masks[3] = {0, 0, 0};
  if (compression == 0) {  // BI_RGB
    if (h.bpp == 16) {
      masks[0] = 0x7C00;
      masks[1] = 0x03E0;
      masks[2] = 0x001F;
    } else if (h.bpp == 32) {
      masks[0] = 0xFF0000;
      masks[1] = 0xFF00;
      masks[2] = 0xFF;
    } else if (h.bpp != 1 && h.bpp != 4 && h.bpp != 8 && h.bpp != 24) {
      bmp_fail(std::to_string(h.bpp) + " bits per pixel is not decoded");
    }
  } else if (compression == 3) {  // BI_BITFIELDS
    if (h.bpp != 16 && h.bpp != 32) {
      bmp_fail("BI_BITFIELDS at " + std::to_string(h.bpp) + " bits per pixel is not decoded");
    }
    // After a 40-byte header the masks follow it, where larger headers hold them.
    if (b.size() < 66) bmp_fail(truncated("bit field masks", b));
    for (int i = 0; i < 3; ++i) masks[i] = le32(b, 54 + 4 * size_t(i));
    if (info_size == 40) palette_at += 12;
  } else {
    bmp_fail("compression " + std::to_string(compression) + compression_name(compression) +
             " is not decoded");
  }
  if (h.bpp == 16 || h.bpp == 32) {
    const char* const colors[3] = {"red", "green", "blue"};
    for (int i = 0; i < 3; ++i) h.fields[i] = bit_field(masks[i], h.bpp, colors[i]);
  }
  if (h.bpp <= 8) {
    // Entries are B, G, R, reserved.
    const uint32_t max_colors = 1u << h.bpp;
    const uint32_t n = colors_used == 0 ? max_colors : colors_used;
    if (n > max_colors) {
      bmp_fail("palette of " + std::to_string(n) + " colors at " + std::to_string(h.bpp) +
               " bits per pixel");
    }
    if (palette_at + uint64_t{n} * 4 > b.size()) bmp_fail(truncated("palette", b));
    h.palette.resize(n);
    h.gray = true;
    for (uint32_t i = 0; i < n; ++i) {
      const size_t at = static_cast<size_t>(palette_at) + size_t{i} * 4;
      Rgb& c = h.palette[i];
      c.r = byte_at(b, at + 2);
      c.g = byte_at(b, at + 1);
      c.b = byte_at(b, at);
      h.gray = h.gray && c.r == c.g && c.g == c.b;
    }
  }
  return h;
}

// Pixel x of a stored row.
Rgb bmp_pixel(const BmpHeader& h, const uint8_t* row, size_t x) {
  uint32_t pixel = 0;
  switch (h.bpp) {
    case 1:
    case 4:
    case 8: {
      // The leftmost pixel is in the high bits of its byte.
      const size_t bit = x * size_t(h.bpp);
      const int shift = 8 - h.bpp - static_cast<int>(bit % 8);
      const uint32_t index = (uint32_t{row[bit / 8]} >> shift) & ((1u << h.bpp) - 1);
      if (index >= h.palette.size()) {
        bmp_fail("pixel uses palette index " + std::to_string(index) + " of a " +
                 std::to_string(h.palette.size()) + "-color palette");
      }
      return h.palette[index];
    }
    case 24: {
      Rgb c;
      c.r = row[x * 3 + 2];
      c.g = row[x * 3 + 1];
      c.b = row[x * 3];
      return c;
    }
    case 16:
      pixel = uint32_t{row[x * 2]} | (uint32_t{row[x * 2 + 1]} << 8);
      break;
    default:  // 32
      pixel = uint32_t{row[x * 4]} | (uint32_t{row[x * 4 + 1]} << 8) |
              (uint32_t{row[x * 4 + 2]} << 16) | (uint32_t{row[x * 4 + 3]} << 24);
      break;
  }
  Rgb c;
  c.r = field_value(pixel, h.fields[0]);
  c.g = field_value(pixel, h.fields[1]);
  c.b = field_value(pixel, h.fields[2]);
  return c;
}

// ---- GIF ----

[[noreturn]] void gif_fail(const std::string& why) { throw DataError("undecodable GIF: " + why); }

// A global or local color table of 2 << (flags & 7) RGB entries, at *pos.
std::vector<Rgb> read_color_table(std::string_view b, size_t* pos, uint8_t flags,
                                  const char* which) {
  const size_t n = size_t{2} << (flags & 7);
  if (b.size() - *pos < n * 3) gif_fail(std::string(which) + " color table truncated");
  std::vector<Rgb> table(n);
  for (size_t i = 0; i < n; ++i) {
    table[i].r = byte_at(b, *pos + i * 3);
    table[i].g = byte_at(b, *pos + i * 3 + 1);
    table[i].b = byte_at(b, *pos + i * 3 + 2);
  }
  *pos += n * 3;
  return table;
}

// The LZW codes of a frame, packed least significant bit first into data sub-blocks (a length
// byte, then that many bytes; a zero length ends them).
class GifCodeReader {
 public:
  GifCodeReader(std::string_view bytes, size_t pos) : bytes_(bytes), pos_(pos) {}

  // False when the sub-blocks end, or the file does, before `width` more bits.
  bool next(int width, uint32_t* code) {
    while (bits_ < width) {
      if (block_left_ == 0) {
        if (ended_ || pos_ >= bytes_.size()) return false;
        block_left_ = byte_at(bytes_, pos_++);
        if (block_left_ == 0 || block_left_ > bytes_.size() - pos_) {
          ended_ = true;
          block_left_ = 0;
          return false;
        }
      }
      acc_ |= uint32_t{byte_at(bytes_, pos_++)} << bits_;
      bits_ += 8;
      --block_left_;
    }
    *code = acc_ & ((1u << width) - 1);
    acc_ >>= width;
    bits_ -= width;
    return true;
  }

 private:
  std::string_view bytes_;
  size_t pos_;
  size_t block_left_ = 0;
  uint32_t acc_ = 0;
  int bits_ = 0;
  bool ended_ = false;
};

constexpr uint32_t kMaxCodes = 4096;  // 12-bit codes

}  // namespace

bool is_bmp(std::string_view bytes) { return bytes.size() >= 2 && bytes.substr(0, 2) == "BM"; }

bool is_gif(std::string_view bytes) {
  return bytes.size() >= 6 && (bytes.substr(0, 6) == "GIF87a" || bytes.substr(0, 6) == "GIF89a");
}

ImageInfo bmp_info(std::string_view bytes) {
  const BmpHeader h = parse_bmp(bytes);
  const int64_t rows = h.height < 0 ? -h.height : h.height;
  if (rows > INT32_MAX) bmp_fail(image_size_error(h.width, h.height));
  return {ImageFormat::kBmp, static_cast<int>(rows), static_cast<int>(h.width), h.gray ? 1 : 3};
}

Image decode_bmp(std::string_view bytes, int channels) {
  check_channels(channels, "decode_bmp");
  const BmpHeader h = parse_bmp(bytes);
  const int64_t rows = h.height < 0 ? -h.height : h.height;
  if (!image_size_ok(h.width, rows)) bmp_fail(image_size_error(h.width, h.height));
  const uint64_t stride = (uint64_t(h.width) * uint64_t(h.bpp) + 31) / 32 * 4;
  if (h.pixel_offset > bytes.size() || stride * uint64_t(rows) > bytes.size() - h.pixel_offset) {
    bmp_fail("pixel rows truncated: " + std::to_string(rows) + " rows of " +
             std::to_string(stride) + " bytes at offset " + std::to_string(h.pixel_offset) +
             ", the file has " + std::to_string(bytes.size()) + " bytes");
  }
  Image out;
  out.height = static_cast<int>(rows);
  out.width = static_cast<int>(h.width);
  out.channels = channels != 0 ? channels : (h.gray ? 1 : 3);
  const size_t width = static_cast<size_t>(h.width);
  const size_t out_stride = width * size_t(out.channels);
  out.pixels.resize(size_t(rows) * out_stride);
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + h.pixel_offset;
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* src = data + size_t(y) * stride;
    const int64_t out_row = h.height > 0 ? rows - 1 - y : y;
    uint8_t* dst = out.pixels.data() + size_t(out_row) * out_stride;
    for (size_t x = 0; x < width; ++x) {
      put_pixel(dst + x * size_t(out.channels), out.channels, bmp_pixel(h, src, x));
    }
  }
  return out;
}

ImageInfo gif_info(std::string_view bytes) {
  if (!is_gif(bytes)) gif_fail("no GIF87a or GIF89a signature");
  // The logical screen descriptor: width, height, flags, background index, aspect ratio.
  if (bytes.size() < 13) gif_fail("logical screen descriptor truncated");
  const uint32_t width = le16(bytes, 6), height = le16(bytes, 8);
  if (width == 0 || height == 0) gif_fail(image_size_error(width, height));
  return {ImageFormat::kGif, static_cast<int>(height), static_cast<int>(width), 3};
}

Image decode_gif(std::string_view bytes, int channels) {
  check_channels(channels, "decode_gif");
  const ImageInfo info = gif_info(bytes);
  if (!image_size_ok(info.width, info.height)) gif_fail(image_size_error(info.width, info.height));
  size_t pos = 13;
  std::vector<Rgb> global;
  const uint8_t screen_flags = byte_at(bytes, 10);
  if ((screen_flags & 0x80) != 0) global = read_color_table(bytes, &pos, screen_flags, "global");

  // Extensions up to the first image descriptor. giflib, TensorFlow's decoder, takes the
  // transparent index from the first Graphic Control Extension, and only when its data is the
  // 4 bytes of the spec (flags, delay, index).
  int transparent = -1;
  bool seen_control = false;
  for (;;) {
    if (pos >= bytes.size()) gif_fail("the file ends before an image");
    const uint8_t block = byte_at(bytes, pos++);
    if (block == 0x2C) break;
    if (block == 0x3B) gif_fail("no image before the trailer");
    if (block != 0x21) gif_fail("unknown block type " + hex(block));
    if (pos >= bytes.size()) gif_fail("extension truncated");
    const uint8_t label = byte_at(bytes, pos++);
    bool first_sub_block = true;
    for (;;) {
      if (pos >= bytes.size()) gif_fail("extension truncated");
      const size_t n = byte_at(bytes, pos++);
      if (n == 0) break;
      if (n > bytes.size() - pos) gif_fail("extension truncated");
      if (label == 0xF9 && first_sub_block && !seen_control) {
        seen_control = true;
        if (n == 4 && (byte_at(bytes, pos) & 1) != 0) transparent = byte_at(bytes, pos + 3);
      }
      first_sub_block = false;
      pos += n;
    }
  }

  // The image descriptor: left, top, width, height, flags (local table, interlace, table size).
  if (bytes.size() - pos < 9) gif_fail("image descriptor truncated");
  const int64_t left = le16(bytes, pos), top = le16(bytes, pos + 2);
  const int64_t frame_width = le16(bytes, pos + 4), frame_height = le16(bytes, pos + 6);
  const uint8_t frame_flags = byte_at(bytes, pos + 8);
  pos += 9;
  if (uint64_t(frame_width * frame_height) > kMaxImagePixels) {
    gif_fail("frame " + image_size_error(frame_width, frame_height));
  }
  std::vector<Rgb> local;
  if ((frame_flags & 0x80) != 0) local = read_color_table(bytes, &pos, frame_flags, "local");
  const std::vector<Rgb>& table = (frame_flags & 0x80) != 0 ? local : global;
  if (table.empty()) gif_fail("no color table for the first frame");
  if (pos >= bytes.size()) gif_fail("LZW minimum code size missing");
  const int min_code_size = byte_at(bytes, pos++);
  if (min_code_size < 2 || min_code_size > 8) {
    gif_fail("LZW minimum code size " + std::to_string(min_code_size) + " is not in 2..8");
  }

  Image out;
  out.height = info.height;
  out.width = info.width;
  out.channels = channels == 0 ? 3 : channels;
  out.pixels.assign(size_t(out.height) * size_t(out.width) * size_t(out.channels), 0);

  // Frame pixels arrive row by row; interlaced, in 4 passes of rows 0, 8, 16, ...; 4, 12, ...;
  // 2, 6, ...; 1, 3, ....
  const bool interlaced = (frame_flags & 0x40) != 0;
  constexpr int64_t kPassStart[4] = {0, 4, 2, 1};
  constexpr int64_t kPassStep[4] = {8, 8, 4, 2};
  const uint64_t total = uint64_t(frame_width * frame_height);
  uint64_t written = 0;
  int64_t row = 0, col = 0;
  int pass = 0;
  auto emit = [&](uint32_t index) {
    const int64_t x = left + col, y = top + row;
    if (x < out.width && y < out.height && static_cast<int>(index) != transparent) {
      if (index >= table.size()) {
        gif_fail("pixel uses color index " + std::to_string(index) + " of a " +
                 std::to_string(table.size()) + "-color table");
      }
      put_pixel(out.pixels.data() + (size_t(y) * size_t(out.width) + size_t(x)) * out.channels,
                out.channels, table[index]);
    }
    ++written;
    if (++col == frame_width) {
      col = 0;
      if (!interlaced) {
        ++row;
      } else {
        row += kPassStep[pass];
        while (row >= frame_height && pass < 3) row = kPassStart[++pass];
      }
    }
  };

  // LZW (GIF89a appendix F): codes below `clear` are pixels, `clear` resets the table, `end`
  // ends the data; each further code names the string of the previous code plus the first pixel
  // of its own (which, for the code about to be defined, is the previous string's first pixel).
  // Codes widen from min_code_size + 1 bits when the next code to define needs another bit, up
  // to 12; a full table stays as it is until a clear code (the "deferred clear").
  const uint32_t clear = 1u << min_code_size, end = clear + 1;
  // The string of code c: the string of prefix[c], then suffix[c]; first[c] is its first pixel.
  std::vector<uint16_t> prefix(kMaxCodes), length(kMaxCodes);
  std::vector<uint8_t> suffix(kMaxCodes), first(kMaxCodes), decoded(kMaxCodes);
  for (uint32_t c = 0; c < clear; ++c) {
    suffix[c] = first[c] = static_cast<uint8_t>(c);
    length[c] = 1;
  }
  GifCodeReader reader(bytes, pos);
  uint32_t next = end + 1;
  int width = min_code_size + 1;
  int64_t prev = -1;  // none after a clear code
  while (written < total) {
    uint32_t code = 0;
    if (!reader.next(width, &code) || code == end) {
      gif_fail("frame data ends early (" + std::to_string(written) + " of " +
               std::to_string(total) + " pixels)");
    }
    if (code == clear) {
      next = end + 1;
      width = min_code_size + 1;
      prev = -1;
      continue;
    }
    if (prev < 0) {
      if (code > end) gif_fail("LZW code " + std::to_string(code) + " where a pixel must follow");
    } else {
      if (code > next) {
        gif_fail("LZW code " + std::to_string(code) + " before it is defined (next is " +
                 std::to_string(next) + ")");
      }
      if (next < kMaxCodes) {
        prefix[next] = static_cast<uint16_t>(prev);
        suffix[next] = code < next ? first[code] : first[prev];
        first[next] = first[prev];
        length[next] = static_cast<uint16_t>(length[prev] + 1);
        ++next;
        if (next == (1u << width) && width < 12) ++width;
      }
    }
    const size_t n = length[code];
    uint32_t c = code;
    for (size_t i = n; i-- > 0;) {
      decoded[i] = suffix[c];
      c = prefix[c];
    }
    for (size_t i = 0; i < n && written < total; ++i) emit(decoded[i]);
    prev = code;
  }
  return out;
}

}  // namespace fastnn::io
