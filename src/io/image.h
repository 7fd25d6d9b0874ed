// Decoding and encoding of 8-bit images (PNG via libpng, JPEG via libjpeg;
// BMP and GIF decoded here, src/io/image_bmp_gif.h).
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
enum class ImageFormat { kUnknown, kPng, kJpeg, kBmp, kGif };

/// Recognises PNG (89 'P' 'N' 'G' 0D 0A 1A 0A), JPEG (FF D8 FF), BMP ("BM")
/// and GIF ("GIF87a", "GIF89a").
ImageFormat sniff_format(std::string_view bytes);

/// Decodes PNG, JPEG, BMP or GIF bytes (format sniffed, not taken from
/// image/format; a GIF's first frame, as TF's decode_image).
/// channels: 0 keeps the stored color type (gray and gray+alpha give 1;
/// RGB, RGBA, palette and CMYK give 3), 1 forces gray, 3 forces RGB. Alpha is
/// dropped, not composited. Throws DataError with the decoder's reason,
/// also for a JPEG whose scan ends early (libjpeg would pad it with gray).
Image decode_image(std::string_view bytes, int channels = 0);

/// What the header says, read without decoding pixels.
struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int height = 0;
  int width = 0;
  /// Stored color channels: 1 (gray, gray+alpha) or 3 (anything else).
  int channels = 0;
};

/// Reads the size from the PNG IHDR chunk, the JPEG SOF marker, the BMP
/// info header or the GIF logical screen (no pixel decoding; microseconds).
/// Throws DataError when the bytes are none of these or the header is
/// missing or truncated.
ImageInfo read_image_info(std::string_view bytes);

/// A decode of part of an image, possibly downscaled (see DecodeOptions).
struct DecodeOptions {
  /// 0 keeps the stored color type, 1 forces gray, 3 forces RGB.
  int channels = 0;
  /// Region of interest in original-image pixels; crop_height == 0 means the
  /// whole image. REQUIRES: inside the image.
  int crop_top = 0, crop_left = 0, crop_height = 0, crop_width = 0;
  /// JPEG only: decode at the smallest DCT scale n/8 (n = 1, 2, 4, 8: the
  /// scales with SIMD IDCTs) whose scaled region is still at least
  /// min_height x min_width. 0 = full size.
  int min_height = 0, min_width = 0;
};

/// Result of decode_region: `image` covers at least the requested region of
/// the full image scaled by scale_num/8; pixel (0,0) of `image` is pixel
/// (origin_top, origin_left) of that scaled full image. PNG and unscaled
/// JPEG decodes have scale_num 8.
struct DecodedRegion {
  Image image;
  int scale_num = 8;
  int origin_top = 0, origin_left = 0;
};

/// Decodes only what `options` asks for. For JPEG this uses libjpeg-turbo's
/// DCT-domain scaling and skips rows (jpeg_skip_scanlines) and columns
/// (jpeg_crop_scanline) outside the region; PNG, BMP and GIF are decoded
/// whole. A JPEG
/// whose data ends early throws DataError as in decode_image; below the
/// region, where nothing is decoded, only a missing EOI marker shows it.
DecodedRegion decode_region(std::string_view bytes, const DecodeOptions& options);

/// Encodes an 8-bit gray (channels 1) or RGB (channels 3) image as PNG.
std::string encode_png(const Image& img);

/// Encodes an 8-bit gray or RGB image as baseline JPEG (libjpeg defaults:
/// 4:2:0 chroma subsampling for RGB). REQUIRES: quality in [1, 100].
std::string encode_jpeg(const Image& img, int quality = 90);

}  // namespace fastnn::io
