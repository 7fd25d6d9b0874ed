// Decoding and encoding of 8-bit images (PNG via libpng, JPEG via libjpeg).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::io {

/// An 8-bit image, pixels in HWC order (row-major, channels interleaved).
struct Image {
  int height = 0;
  int width = 0;
  /// 1 (gray) or 3 (RGB).
  int channels = 0;
  /// height * width * channels bytes.
  std::vector<uint8_t> pixels;
};

/// Image container, recognised from magic bytes.
enum class ImageFormat { kUnknown, kPng, kJpeg };

/// Recognises PNG (89 'P' 'N' 'G' 0D 0A 1A 0A) and JPEG (FF D8 FF).
ImageFormat sniff_format(std::string_view bytes);

/// Decodes PNG or JPEG bytes (format sniffed, not taken from image/format).
/// channels: 0 keeps the stored color type (gray and gray+alpha give 1;
/// RGB, RGBA, palette and CMYK give 3), 1 forces gray, 3 forces RGB. Alpha is
/// dropped, not composited. Throws DataError with the decoder's reason.
Image decode_image(std::string_view bytes, int channels = 0);

/// Encodes an 8-bit gray (channels 1) or RGB (channels 3) image as PNG.
std::string encode_png(const Image& img);

}  // namespace fastnn::io
