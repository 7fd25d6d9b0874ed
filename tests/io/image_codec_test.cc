#include <gtest/gtest.h>

#include "src/io/image.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

Image make_image(int height, int width, int channels) {
  Image img;
  img.height = height;
  img.width = width;
  img.channels = channels;
  img.pixels.resize(size_t(height) * width * channels);
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    img.pixels[i] = static_cast<uint8_t>((i * 37 + i / 5) & 0xFF);
  }
  return img;
}

// An image of four flat quadrants, each 8x8, in the given colors.
Image quadrants(const uint8_t colors[4][3], int channels) {
  Image img = make_image(16, 16, channels);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      const uint8_t* c = colors[(y / 8) * 2 + x / 8];
      for (int k = 0; k < channels; ++k) {
        img.pixels[(y * 16 + x) * channels + k] = c[k];
      }
    }
  }
  return img;
}

uint8_t at(const Image& img, int y, int x, int c) {
  return img.pixels[(size_t(y) * img.width + x) * img.channels + c];
}

// Test-only JPEG writer: libjpeg compression into memory. in_space is
// JCS_GRAYSCALE, JCS_RGB or JCS_CMYK with 1, 3 or 4 bytes per pixel.
std::string encode_jpeg(const std::vector<uint8_t>& pixels, int height, int width,
                        J_COLOR_SPACE in_space, int components, bool progressive = false) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = components;
  cinfo.in_color_space = in_space;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 95, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        const_cast<uint8_t*>(pixels.data()) + size_t(cinfo.next_scanline) * width * components;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return out;
}

// Test-only PNG writer for formats encode_png does not produce.
std::string write_png(png_uint_32 format, int height, int width, const std::vector<uint8_t>& buffer,
                      const std::vector<uint8_t>& colormap = {}) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  image.colormap_entries = static_cast<png_uint_32>(colormap.size() / 3);
  png_alloc_size_t size = 0;
  const void* cmap = colormap.empty() ? nullptr : colormap.data();
  EXPECT_TRUE(png_image_write_get_memory_size(image, size, 0, buffer.data(), 0, cmap));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, buffer.data(), 0, cmap));
  out.resize(size);
  return out;
}

// A region decode of rows [top, top + height) and columns [left, left +
// width); min_side > 0 lets JPEG decode at a DCT scale down to that size.
DecodeOptions crop_options(int channels, int top, int left, int height, int width,
                           int min_side = 0) {
  DecodeOptions o;
  o.channels = channels;
  o.crop_top = top;
  o.crop_left = left;
  o.crop_height = height;
  o.crop_width = width;
  o.min_height = o.min_width = min_side;
  return o;
}

std::string error_of(const std::string& bytes, int channels = 0) {
  try {
    decode_image(bytes, channels);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult near(const Image& img, int y, int x, std::vector<int> want,
                                int tolerance) {
  for (int c = 0; c < img.channels; ++c) {
    int got = at(img, y, x, c);
    if (std::abs(got - want[c]) > tolerance) {
      return ::testing::AssertionFailure()
             << "pixel (" << y << "," << x << ") channel " << c << " is " << got << ", want "
             << want[c] << " +- " << tolerance;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(ImageCodecTest, SniffFormat) {
  EXPECT_EQ(sniff_format("\x89PNG\r\n\x1a\n rest"), ImageFormat::kPng);
  EXPECT_EQ(sniff_format("\xff\xd8\xff\xe0"), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_format("\x89PNG"), ImageFormat::kUnknown);
  EXPECT_EQ(sniff_format("GIF89a"), ImageFormat::kGif);
  EXPECT_EQ(sniff_format("BM"), ImageFormat::kBmp);
  EXPECT_EQ(sniff_format("GIF90a"), ImageFormat::kUnknown);
  EXPECT_EQ(sniff_format(""), ImageFormat::kUnknown);
}

TEST(ImageCodecTest, PngRoundTripGrayAndRgb) {
  for (int channels : {1, 3}) {
    Image img = make_image(7, 5, channels);
    std::string png = encode_png(img);
    EXPECT_EQ(sniff_format(png), ImageFormat::kPng);
    Image back = decode_image(png);
    EXPECT_EQ(back.height, 7);
    EXPECT_EQ(back.width, 5);
    EXPECT_EQ(back.channels, channels);
    EXPECT_EQ(back.pixels, img.pixels) << "channels " << channels;
  }
}

TEST(ImageCodecTest, PngMnistSized) {
  Image img = make_image(28, 28, 1);
  Image back = decode_image(encode_png(img), 1);
  EXPECT_EQ(back.pixels, img.pixels);
}

TEST(ImageCodecTest, PngForcedChannels) {
  Image gray = make_image(4, 6, 1);
  Image rgb = decode_image(encode_png(gray), 3);
  ASSERT_EQ(rgb.channels, 3);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 6; ++x) {
      int v = at(gray, y, x, 0);
      EXPECT_TRUE(near(rgb, y, x, {v, v, v}, 0));
    }
  }

  const uint8_t colors[4][3] = {{0, 0, 0}, {255, 255, 255}, {128, 128, 128}, {255, 0, 0}};
  Image back = decode_image(encode_png(quadrants(colors, 3)), 1);
  ASSERT_EQ(back.channels, 1);
  EXPECT_TRUE(near(back, 0, 0, {0}, 0));
  EXPECT_TRUE(near(back, 0, 15, {255}, 0));
  EXPECT_TRUE(near(back, 15, 0, {128}, 1));
  // Pure red is dark but not black in every luminance formula.
  EXPECT_GT(at(back, 15, 15, 0), 40);
  EXPECT_LT(at(back, 15, 15, 0), 140);
}

TEST(ImageCodecTest, PngAlphaIsDroppedNotComposited) {
  std::vector<uint8_t> rgba = {10, 20, 30, 0, 200, 150, 100, 128};
  Image rgb = decode_image(write_png(PNG_FORMAT_RGBA, 1, 2, rgba));
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.pixels, (std::vector<uint8_t>{10, 20, 30, 200, 150, 100}));

  std::vector<uint8_t> ga = {90, 0, 250, 255};
  Image gray = decode_image(write_png(PNG_FORMAT_GA, 1, 2, ga));
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels, (std::vector<uint8_t>{90, 250}));
}

TEST(ImageCodecTest, PaletteDecodesAsRgb) {
  std::vector<uint8_t> colormap = {255, 0, 0, 0, 0, 255};
  std::vector<uint8_t> indices = {0, 1, 1, 0};
  std::string png = write_png(PNG_FORMAT_RGB_COLORMAP, 2, 2, indices, colormap);
  Image img = decode_image(png);
  ASSERT_EQ(img.channels, 3);
  EXPECT_EQ(img.pixels, (std::vector<uint8_t>{255, 0, 0, 0, 0, 255, 0, 0, 255, 255, 0, 0}));
}

TEST(ImageCodecTest, GarbageAndCorruptPng) {
  EXPECT_EQ(error_of("hello"),
            "undecodable image: not PNG, JPEG, BMP or GIF (5 bytes, starting 68 65 "
            "6c 6c)");
  EXPECT_EQ(error_of(""), "undecodable image: not PNG, JPEG, BMP or GIF (0 bytes)");
  std::string png = encode_png(make_image(16, 16, 3));
  for (size_t cut : {size_t{8}, size_t{20}, size_t{40}, png.size() / 2, png.size() - 13}) {
    std::string msg = error_of(png.substr(0, cut));
    EXPECT_EQ(msg.rfind("undecodable PNG: ", 0), 0u) << cut << ": " << msg;
  }
  std::string flipped = png;
  flipped[png.size() / 2] ^= 0x55;  // inside IDAT: chunk CRC mismatch
  EXPECT_EQ(error_of(flipped).rfind("undecodable PNG: ", 0), 0u);
  std::string junk = "\x89PNG\r\n\x1a\n" + std::string(100, 'j');
  EXPECT_EQ(error_of(junk).rfind("undecodable PNG: ", 0), 0u);
}

TEST(ImageCodecTest, PngHeaderClaimingHugeSizeIsRejected) {
  std::string png = encode_png(make_image(1, 1, 1));
  // IHDR data starts at byte 16 (8 signature + 4 length + 4 type); patch
  // width and height to 100000 (0x000186A0) and fix the chunk CRC, which
  // covers the type and data (bytes 12..28).
  const unsigned char big[4] = {0x00, 0x01, 0x86, 0xA0};
  std::memcpy(&png[16], big, 4);
  std::memcpy(&png[20], big, 4);
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(&png[12]), 17);
  for (int i = 0; i < 4; ++i) {
    png[29 + i] = static_cast<char>(crc >> (24 - 8 * i));
  }
  EXPECT_EQ(error_of(png), "undecodable PNG: size 100000x100000 is empty or too large");
}

TEST(ImageCodecTest, JpegDecodeRgb) {
  const uint8_t colors[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {200, 200, 40}};
  std::string jpeg = encode_jpeg(quadrants(colors, 3), 95);
  ASSERT_EQ(sniff_format(jpeg), ImageFormat::kJpeg);
  Image img = decode_image(jpeg);
  ASSERT_EQ(img.height, 16);
  ASSERT_EQ(img.width, 16);
  ASSERT_EQ(img.channels, 3);
  // Block centres, away from chroma-subsampling bleed at the edges.
  EXPECT_TRUE(near(img, 3, 3, {255, 0, 0}, 12));
  EXPECT_TRUE(near(img, 3, 12, {0, 255, 0}, 12));
  EXPECT_TRUE(near(img, 12, 3, {0, 0, 255}, 12));
  EXPECT_TRUE(near(img, 12, 12, {200, 200, 40}, 12));

  Image gray = decode_image(jpeg, 1);
  ASSERT_EQ(gray.channels, 1);
  // Y = 0.299 R + 0.587 G + 0.114 B.
  EXPECT_TRUE(near(gray, 3, 3, {76}, 6));
  EXPECT_TRUE(near(gray, 3, 12, {150}, 6));
  EXPECT_TRUE(near(gray, 12, 3, {29}, 6));
}

TEST(ImageCodecTest, JpegDecodeGray) {
  const uint8_t colors[4][3] = {{0}, {255}, {100}, {180}};
  std::string jpeg = encode_jpeg(quadrants(colors, 1), 95);
  Image img = decode_image(jpeg);
  ASSERT_EQ(img.channels, 1);
  EXPECT_TRUE(near(img, 3, 3, {0}, 4));
  EXPECT_TRUE(near(img, 3, 12, {255}, 4));
  EXPECT_TRUE(near(img, 12, 3, {100}, 4));
  EXPECT_TRUE(near(img, 12, 12, {180}, 4));
  Image rgb = decode_image(jpeg, 3);
  ASSERT_EQ(rgb.channels, 3);
  EXPECT_TRUE(near(rgb, 12, 3, {100, 100, 100}, 4));
}

TEST(ImageCodecTest, JpegCmykIsConvertedToRgb) {
  // libjpeg writes CMYK with an Adobe marker, whose convention stores inverted
  // ink: (255, 0, 255, 255) means no cyan, full magenta, no yellow, no black.
  std::vector<uint8_t> cmyk;
  for (int i = 0; i < 16 * 16; ++i) {
    cmyk.insert(cmyk.end(), {255, 0, 255, 255});
  }
  std::string jpeg = encode_jpeg(cmyk, 16, 16, JCS_CMYK, 4);
  Image img = decode_image(jpeg);
  ASSERT_EQ(img.channels, 3);
  EXPECT_TRUE(near(img, 8, 8, {255, 0, 255}, 8));
}

TEST(ImageCodecTest, CorruptJpegIsDataError) {
  std::string jpeg = encode_jpeg(make_image(32, 32, 3), 95);
  for (size_t cut : {size_t{3}, size_t{10}, size_t{100}, jpeg.size() / 2, jpeg.size() - 2}) {
    std::string msg = error_of(jpeg.substr(0, cut));
    EXPECT_EQ(msg.rfind("undecodable JPEG: ", 0), 0u) << cut << ": " << msg;
  }
  std::string junk = "\xff\xd8\xff" + std::string(200, '\x42');
  EXPECT_EQ(error_of(junk).rfind("undecodable JPEG: ", 0), 0u);
}

TEST(ImageCodecTest, BadArguments) {
  std::string png = encode_png(make_image(2, 2, 1));
  EXPECT_THROW(decode_image(png, 2), std::invalid_argument);
  EXPECT_THROW(decode_image(png, 4), std::invalid_argument);
  Image bad = make_image(2, 2, 3);
  bad.pixels.pop_back();
  EXPECT_THROW(encode_png(bad), std::invalid_argument);
  EXPECT_THROW(encode_png(make_image(2, 2, 4)), std::invalid_argument);
  EXPECT_THROW(encode_png(Image{}), std::invalid_argument);
}

// Photograph-like content (smooth gradients, an edge, noise) so that JPEG
// blocks carry real AC energy; seeded.
Image textured(int height, int width) {
  Image img = make_image(height, width, 3);
  uint32_t state = 12345;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        state = state * 1664525u + 1013904223u;
        int v = (x * (c + 1) * 255) / width / 2 + (y * 255) / height / 3 +
                (x > width / 3 && y > height / 2 ? 60 : 0) + static_cast<int>(state >> 28) - 8;
        img.pixels[(size_t(y) * width + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return img;
}

TEST(ImageCodecTest, ReadImageInfoFromHeadersOnly) {
  ImageInfo png = read_image_info(encode_png(make_image(7, 5, 1)));
  EXPECT_EQ(png.format, ImageFormat::kPng);
  EXPECT_EQ(png.height, 7);
  EXPECT_EQ(png.width, 5);
  EXPECT_EQ(png.channels, 1);
  std::string jpeg = encode_jpeg(textured(37, 53), 90);
  ImageInfo j = read_image_info(jpeg);
  EXPECT_EQ(j.format, ImageFormat::kJpeg);
  EXPECT_EQ(j.height, 37);
  EXPECT_EQ(j.width, 53);
  EXPECT_EQ(j.channels, 3);
  // The header suffices: pixels cut off do not matter.
  EXPECT_EQ(read_image_info(jpeg.substr(0, 700)).width, 53);
  EXPECT_EQ(read_image_info(encode_jpeg(make_image(9, 4, 1))).channels, 1);
  EXPECT_THROW(read_image_info(jpeg.substr(0, 20)), DataError);
  EXPECT_THROW(read_image_info("GIF89a....."), DataError);
}

TEST(ImageCodecTest, RegionAtFullScaleEqualsFullDecode) {
  const std::string jpeg = encode_jpeg(textured(120, 170), 90);
  const Image full = decode_image(jpeg, 3);
  const DecodedRegion r = decode_region(jpeg, crop_options(3, 37, 45, 50, 61));
  EXPECT_EQ(r.scale_num, 8);
  EXPECT_EQ(r.origin_top, 37);
  // jpeg_crop_scanline widens to a 16-pixel iMCU boundary on the left.
  EXPECT_EQ(r.origin_left, 32);
  ASSERT_EQ(r.image.height, 50);
  ASSERT_GE(r.image.width, 45 + 61 - 32);
  // Inside the requested window the pixels are exactly the full decode's.
  int max_diff = 0;
  for (int y = 0; y < 50; ++y) {
    for (int x = 45 - 32; x < 45 + 61 - 32; ++x) {
      for (int c = 0; c < 3; ++c) {
        max_diff = std::max(max_diff, std::abs(at(r.image, y, x, c) - at(full, y + 37, x + 32, c)));
      }
    }
  }
  EXPECT_EQ(max_diff, 0);
}

// The region's pixels against the same window of the full decode.
int region_vs_full(const std::string& jpeg, int channels) {
  const Image full = decode_image(jpeg, channels);
  const DecodedRegion r = decode_region(jpeg, crop_options(channels, 21, 19, 40, 50));
  int max_diff = 0;
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 50; ++x) {
      for (int c = 0; c < full.channels; ++c) {
        const int ry = 21 + y - r.origin_top, rx = 19 + x - r.origin_left;
        max_diff =
            std::max(max_diff, std::abs(at(r.image, ry, rx, c) - at(full, 21 + y, 19 + x, c)));
      }
    }
  }
  return max_diff;
}

TEST(ImageCodecTest, RegionOfProgressiveGrayAndCmykJpegs) {
  const Image rgb = textured(90, 110);
  std::vector<uint8_t> gray, cmyk;
  for (size_t i = 0; i < rgb.pixels.size(); i += 3) {
    gray.push_back(rgb.pixels[i]);
    cmyk.insert(cmyk.end(), {rgb.pixels[i], rgb.pixels[i + 1], rgb.pixels[i + 2], 200});
  }
  EXPECT_EQ(region_vs_full(encode_jpeg(rgb.pixels, 90, 110, JCS_RGB, 3, true), 3), 0);
  EXPECT_EQ(region_vs_full(encode_jpeg(gray, 90, 110, JCS_GRAYSCALE, 1), 1), 0);
  EXPECT_EQ(region_vs_full(encode_jpeg(gray, 90, 110, JCS_GRAYSCALE, 1), 3), 0);
  EXPECT_EQ(region_vs_full(encode_jpeg(cmyk, 90, 110, JCS_CMYK, 4), 3), 0);
  EXPECT_EQ(region_vs_full(encode_jpeg(rgb.pixels, 90, 110, JCS_RGB, 3), 1), 0);
}

TEST(ImageCodecTest, RegionPicksTheSmallestSufficientDctScale) {
  const std::string jpeg = encode_jpeg(textured(375, 500), 90);
  DecodeOptions o;
  o.channels = 3;
  o.min_height = 224;
  o.min_width = 224;
  // 375 * n / 8 >= 224 first holds for n = 5, which is not offered (no
  // SIMD IDCT): full scale. For 160 x 160, n = 4 (half size) suffices.
  DecodedRegion r = decode_region(jpeg, o);
  EXPECT_EQ(r.scale_num, 8);
  o.min_height = 160;
  o.min_width = 160;
  r = decode_region(jpeg, o);
  EXPECT_EQ(r.scale_num, 4);
  EXPECT_EQ(r.image.height, (375 * 4 + 7) / 8);
  EXPECT_EQ(r.image.width, (500 * 4 + 7) / 8);
  // A 120x100 crop needs full scale for 224; 2/8 suffices for 28x24.
  o.min_height = 224;
  o.min_width = 224;
  o.crop_top = 100;
  o.crop_left = 200;
  o.crop_height = 120;
  o.crop_width = 100;
  EXPECT_EQ(decode_region(jpeg, o).scale_num, 8);
  o.min_height = 28;
  o.min_width = 24;
  r = decode_region(jpeg, o);
  EXPECT_EQ(r.scale_num, 2);
  EXPECT_EQ(r.origin_top, 25);
  EXPECT_LE(r.origin_left, 50);
  EXPECT_GE(r.origin_left + r.image.width, 75);
  EXPECT_EQ(r.image.height, 30);
  // PNG has no DCT: always whole, full scale.
  r = decode_region(encode_png(textured(40, 30)), o);
  EXPECT_EQ(r.scale_num, 8);
  EXPECT_EQ(r.image.height, 40);
}

::testing::AssertionResult premature_end(const std::string& msg) {
  std::string lower = msg;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (msg.rfind("undecodable JPEG: ", 0) == 0 && lower.find("premature end") != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "'" << msg << "' is not a premature-end JPEG error";
}

std::string region_error_of(const std::string& bytes, const DecodeOptions& o) {
  try {
    decode_region(bytes, o);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageCodecTest, JpegCutInsideItsScanIsDataErrorOnEveryPath) {
  // libjpeg pads a cut scan with gray and only warns: JWRN_JPEG_EOF when the
  // bytes run out, JWRN_HIT_MARKER when the EOI marker follows the cut.
  const std::string jpeg = encode_jpeg(textured(120, 170), 90);
  const size_t sos = jpeg.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  const size_t scan =
      sos + 2 +
      (size_t{static_cast<uint8_t>(jpeg[sos + 2])} << 8 | static_cast<uint8_t>(jpeg[sos + 3]));
  const size_t eoi = jpeg.size() - 2;
  ASSERT_EQ(jpeg.substr(eoi), "\xFF\xD9");
  ASSERT_GT(eoi, scan + 1000);
  // About 40 % of the scan: the first 40-odd of 120 rows survive.
  const std::string head = jpeg.substr(0, scan + (eoi - scan) * 2 / 5);

  // Inception's crop, at full scale and DCT-downscaled to 2/8; inception
  // eval's central 87.5 % at 4/8; rows above the cut, where only the missing
  // EOI tells.
  const DecodeOptions bottom = crop_options(3, 96, 40, 24, 100);
  const DecodeOptions bottom_quarter = crop_options(3, 96, 40, 24, 100, 6);
  const DecodeOptions central = crop_options(3, 7, 10, 105, 149, 50);
  const DecodeOptions top = crop_options(3, 0, 0, 16, 170);

  for (const bool keep_eoi : {true, false}) {
    const std::string cut = keep_eoi ? head + "\xFF\xD9" : head;
    SCOPED_TRACE(keep_eoi ? "EOI kept" : "EOI dropped");
    for (int channels : {0, 1, 3}) {
      EXPECT_TRUE(premature_end(error_of(cut, channels))) << channels;
    }
    EXPECT_TRUE(premature_end(region_error_of(cut, bottom)));
    EXPECT_TRUE(premature_end(region_error_of(cut, bottom_quarter)));
    EXPECT_TRUE(premature_end(region_error_of(cut, central)));
    // The header is intact: inception still reads the size, then fails above.
    EXPECT_EQ(read_image_info(cut).height, 120);
  }
  EXPECT_TRUE(premature_end(region_error_of(head, top)));

  // The complete file decodes on every path.
  EXPECT_EQ(decode_image(jpeg, 3).height, 120);
  EXPECT_EQ(decode_region(jpeg, bottom).image.height, 24);
  EXPECT_EQ(decode_region(jpeg, bottom_quarter).scale_num, 2);
  EXPECT_EQ(decode_region(jpeg, central).scale_num, 4);
  EXPECT_EQ(decode_region(jpeg, top).image.height, 16);
}

TEST(ImageCodecTest, FormatComesFromTheBytes) {
  // Whatever a record's image/format claims, the bytes decide.
  const std::string jpeg = encode_jpeg(textured(16, 16), 90);
  const std::string png = encode_png(make_image(16, 16, 3));
  EXPECT_EQ(decode_image(jpeg).channels, 3);
  EXPECT_EQ(decode_image(png).channels, 3);
  EXPECT_EQ(read_image_info(jpeg).format, ImageFormat::kJpeg);
  EXPECT_EQ(read_image_info(png).format, ImageFormat::kPng);
}

}  // namespace
}  // namespace fastnn::io
