#include "src/io/image.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "fastnn/errors.h"
#include "src/io/image_bmp_gif.h"
#include "src/io/image_limits.h"

namespace fastnn::io {
namespace {

constexpr unsigned char kPngMagic[] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
constexpr unsigned char kJpegMagic[] = {0xFF, 0xD8, 0xFF};

bool starts_with(std::string_view bytes, const unsigned char* magic, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

// Removes every (stride)th byte (the alpha channel) in place.
void drop_alpha(std::vector<uint8_t>* pixels, int color_channels) {
  const size_t stride = color_channels + 1;
  const size_t n = pixels->size() / stride;
  uint8_t* p = pixels->data();
  for (size_t i = 0; i < n; ++i) {
    for (int c = 0; c < color_channels; ++c) {
      p[i * color_channels + c] = p[i * stride + c];
    }
  }
  pixels->resize(n * color_channels);
}

struct PngImageFree {
  png_image* image;
  ~PngImageFree() { png_image_free(image); }
};

Image decode_png(std::string_view bytes, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  PngImageFree guard{&image};
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    throw DataError(std::string("undecodable PNG: ") + image.message);
  }
  if (!image_size_ok(image.width, image.height)) {
    throw DataError("undecodable PNG: " + image_size_error(image.width, image.height));
  }
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  const bool alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  Image out;
  out.height = static_cast<int>(image.height);
  out.width = static_cast<int>(image.width);
  out.channels = channels;
  if (channels == 0) {
    out.channels = (image.format & PNG_FORMAT_FLAG_COLOR) != 0 ? 3 : 1;
  }
  image.format =
      (out.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
  out.pixels.resize(size_t{image.width} * image.height * (out.channels + (alpha ? 1 : 0)));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    throw DataError(std::string("undecodable PNG: ") + image.message);
  }
  if (alpha) {
    drop_alpha(&out.pixels, out.channels);
  }
  return out;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are not printed. Running out of data is an error: libjpeg would
// otherwise pad the image with gray and report success. It says
// JWRN_JPEG_EOF ("Premature end of JPEG file") when the bytes run out, and
// JWRN_HIT_MARKER ("Corrupt JPEG data: premature end of data segment") when
// a scan is cut short by a marker, e.g. a truncated file that kept its EOI.
void jpeg_message(j_common_ptr cinfo, int level) {
  const int code = cinfo->err->msg_code;
  if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) {
    jpeg_fail(cinfo);
  }
}

// Whether an EOI marker (FF D9) lies at or after `from`. Entropy-coded data
// cannot hold one (an FF data byte is stored as FF 00), so without it the
// file was cut short.
bool has_eoi_after(std::string_view bytes, size_t from) {
  const size_t at = bytes.rfind(std::string_view("\xFF\xD9", 2));
  return at != std::string_view::npos && at >= from;
}

uint8_t cmyk_channel(int c, int k, bool inverted) {
  int v = inverted ? c * k : (255 - c) * (255 - k);
  return static_cast<uint8_t>((v + 127) / 255);
}

// Converts one row of CMYK (as libjpeg returns it) to gray or RGB.
void cmyk_row(const uint8_t* in, int width, int channels, bool adobe, uint8_t* out) {
  for (int x = 0; x < width; ++x, in += 4) {
    uint8_t r = cmyk_channel(in[0], in[3], adobe);
    uint8_t g = cmyk_channel(in[1], in[3], adobe);
    uint8_t b = cmyk_channel(in[2], in[3], adobe);
    if (channels == 1) {
      *out++ = static_cast<uint8_t>((299 * r + 587 * g + 114 * b + 500) / 1000);
    } else {
      *out++ = r;
      *out++ = g;
      *out++ = b;
    }
  }
}

// The scaled region to decode, in the coordinates of the full image scaled
// by scale_num/8 (libjpeg rounds scaled sizes up).
struct ScaledPlan {
  int scale_num = 8;
  JDIMENSION top = 0, left = 0, bottom = 0, right = 0;
};

JDIMENSION scaled_floor(int64_t v, int num) { return static_cast<JDIMENSION>(v * num / 8); }

JDIMENSION scaled_ceil(int64_t v, int num) { return static_cast<JDIMENSION>((v * num + 7) / 8); }

ScaledPlan plan_region(const DecodeOptions& o, int height, int width) {
  const bool crop = o.crop_height > 0 && o.crop_width > 0;
  const int64_t top = crop ? o.crop_top : 0, left = crop ? o.crop_left : 0;
  const int64_t h = crop ? o.crop_height : height;
  const int64_t w = crop ? o.crop_width : width;
  ScaledPlan p;
  if (o.min_height > 0 || o.min_width > 0) {
    // Only 1/8, 1/4, 1/2: libjpeg-turbo has SIMD IDCTs for those (and for
    // 8/8), while 3/8, 5/8, 3/4, 7/8 use plain C IDCTs (10x10 .. 14x14 for
    // 4:2:0 chroma) that decode slower than full size.
    for (int n : {1, 2, 4, 8}) {
      if (h * n >= int64_t{o.min_height} * 8 && w * n >= int64_t{o.min_width} * 8) {
        p.scale_num = n;
        break;
      }
    }
  }
  // One extra column on each side: libjpeg-turbo upsamples chroma at a
  // cropped edge as at an image edge, which changes the edge columns by a
  // level or two; the margin keeps those outside the requested region.
  p.top = scaled_floor(top, p.scale_num);
  p.left = scaled_floor(std::max<int64_t>(left - 1, 0), p.scale_num);
  p.bottom = std::min(scaled_ceil(top + h, p.scale_num), scaled_ceil(height, p.scale_num));
  p.right = std::min(scaled_ceil(left + w + 1, p.scale_num), scaled_ceil(width, p.scale_num));
  p.top = std::min(p.top, p.bottom);
  p.left = std::min(p.left, p.right);
  return p;
}

// C-style on purpose: no object with a destructor lives across the setjmp,
// so longjmp out of libjpeg is well defined. Returns false with *message set
// when libjpeg reports an error or the data ends early. Rows below the
// region are never decoded (jpeg_abort_decompress): a file cut short there is
// caught by its missing EOI marker, a cut scan followed by EOI is not.
bool decode_jpeg_into(std::string_view bytes, const DecodeOptions& options, DecodedRegion* region,
                      char* message) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    std::memcpy(message, err.message, JMSG_LENGTH_MAX);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  // The header reader stops at the first scan's data.
  const size_t scan_start = bytes.size() - cinfo.src->bytes_in_buffer;
  if (!image_size_ok(cinfo.image_width, cinfo.image_height)) {
    std::snprintf(message, JMSG_LENGTH_MAX, "%s",
                  image_size_error(cinfo.image_width, cinfo.image_height).c_str());
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const ScaledPlan plan = plan_region(options, static_cast<int>(cinfo.image_height),
                                      static_cast<int>(cinfo.image_width));
  if (plan.top == plan.bottom || plan.left == plan.right) {
    std::snprintf(message, JMSG_LENGTH_MAX, "region outside the image");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.scale_num = static_cast<unsigned int>(plan.scale_num);
  cinfo.scale_denom = 8;
  const J_COLOR_SPACE stored = cinfo.jpeg_color_space;
  const bool cmyk = stored == JCS_CMYK || stored == JCS_YCCK;
  const int out_channels =
      options.channels != 0 ? options.channels : (stored == JCS_GRAYSCALE ? 1 : 3);
  if (cmyk) {
    cinfo.out_color_space = JCS_CMYK;
  } else {
    cinfo.out_color_space = out_channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  }
  jpeg_start_decompress(&cinfo);
  JDIMENSION left = plan.left;
  JDIMENSION width = plan.right - plan.left;
  if (plan.left > 0 || plan.right < cinfo.output_width) {
    // Widens the window to iMCU boundaries: left moves left, width grows.
    jpeg_crop_scanline(&cinfo, &left, &width);
  }
  const JDIMENSION top = plan.top;
  const JDIMENSION rows = plan.bottom - plan.top;
  Image* out = &region->image;
  try {
    region->scale_num = plan.scale_num;
    region->origin_top = static_cast<int>(top);
    region->origin_left = static_cast<int>(left);
    out->height = static_cast<int>(rows);
    out->width = static_cast<int>(cinfo.output_width);
    out->channels = out_channels;
    out->pixels.resize(size_t{cinfo.output_width} * rows * out_channels);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  if (top > 0) jpeg_skip_scanlines(&cinfo, top);
  const size_t stride = size_t{cinfo.output_width} * out_channels;
  JSAMPARRAY cmyk_buffer = cmyk ? (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                                             JPOOL_IMAGE, cinfo.output_width * 4, 1)
                                : nullptr;
  for (JDIMENSION scanline = 0; scanline < rows; ++scanline) {
    uint8_t* row = out->pixels.data() + scanline * stride;
    if (cmyk) {
      jpeg_read_scanlines(&cinfo, cmyk_buffer, 1);
      cmyk_row(cmyk_buffer[0], out->width, out_channels, cinfo.saw_Adobe_marker != 0, row);
    } else {
      JSAMPROW dst[1] = {row};
      jpeg_read_scanlines(&cinfo, dst, 1);
    }
  }
  if (cinfo.output_scanline == cinfo.output_height) {
    jpeg_finish_decompress(&cinfo);
  } else if (!has_eoi_after(bytes, scan_start)) {
    std::snprintf(message, JMSG_LENGTH_MAX,
                  "Premature end of JPEG file (no EOI marker after the scan)");
    jpeg_destroy_decompress(&cinfo);
    return false;
  } else {
    jpeg_abort_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  return true;
}

DecodedRegion decode_jpeg(std::string_view bytes, const DecodeOptions& o) {
  DecodedRegion out;
  char message[JMSG_LENGTH_MAX];
  if (!decode_jpeg_into(bytes, o, &out, message)) {
    throw DataError(std::string("undecodable JPEG: ") + message);
  }
  return out;
}

uint32_t be32(std::string_view b, size_t at) {
  auto u = [&](size_t i) { return uint32_t(static_cast<uint8_t>(b[at + i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

uint32_t be16(std::string_view b, size_t at) {
  return (uint32_t(static_cast<uint8_t>(b[at])) << 8) | static_cast<uint8_t>(b[at + 1]);
}

ImageInfo png_info(std::string_view b) {
  // Signature (8), then the IHDR chunk: length (4), "IHDR", width, height,
  // bit depth, color type.
  if (b.size() < 26 || b.substr(12, 4) != "IHDR") {
    throw DataError("undecodable PNG: no IHDR chunk");
  }
  if (be32(b, 16) > 0x7fffffffu || be32(b, 20) > 0x7fffffffu) {
    throw DataError("undecodable PNG: " + image_size_error(be32(b, 16), be32(b, 20)));
  }
  const int color_type = static_cast<uint8_t>(b[25]);
  return {ImageFormat::kPng, static_cast<int>(be32(b, 20)), static_cast<int>(be32(b, 16)),
          color_type == 0 || color_type == 4 ? 1 : 3};
}

ImageInfo jpeg_info(std::string_view bytes) {
  size_t pos = 2;
  while (pos + 4 <= bytes.size()) {
    if (static_cast<uint8_t>(bytes[pos]) != 0xFF) break;
    const uint8_t marker = static_cast<uint8_t>(bytes[pos + 1]);
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // markers without length
      pos += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) break;  // EOI or scan data before any frame
    const size_t len = be16(bytes, pos + 2);
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) {
      // Length (2), precision (1), height (2), width (2), components (1).
      if (len < 8 || pos + 10 > bytes.size()) break;
      ImageInfo info{ImageFormat::kJpeg, static_cast<int>(be16(bytes, pos + 5)),
                     static_cast<int>(be16(bytes, pos + 7)),
                     static_cast<uint8_t>(bytes[pos + 9]) == 1 ? 1 : 3};
      if (info.height == 0 || info.width == 0) break;
      return info;
    }
    if (len < 2) break;
    pos += 2 + len;
  }
  throw DataError("undecodable JPEG: no frame header (SOF) with a size");
}

[[noreturn]] void throw_unknown(std::string_view bytes) {
  std::string head;
  char hex[4];
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    std::snprintf(hex, sizeof(hex), " %02x", static_cast<uint8_t>(bytes[i]));
    head += hex;
  }
  throw DataError("undecodable image: not PNG, JPEG, BMP or GIF (" + std::to_string(bytes.size()) +
                  " bytes" + (head.empty() ? "" : ", starting" + head) + ")");
}

}  // namespace

ImageFormat sniff_format(std::string_view bytes) {
  if (starts_with(bytes, kPngMagic, sizeof(kPngMagic))) {
    return ImageFormat::kPng;
  }
  if (starts_with(bytes, kJpegMagic, sizeof(kJpegMagic))) {
    return ImageFormat::kJpeg;
  }
  if (is_bmp(bytes)) return ImageFormat::kBmp;
  if (is_gif(bytes)) return ImageFormat::kGif;
  return ImageFormat::kUnknown;
}

Image decode_image(std::string_view bytes, int channels) {
  check_channels(channels, "decode_image");
  DecodeOptions o;
  o.channels = channels;
  return decode_region(bytes, o).image;
}

ImageInfo read_image_info(std::string_view bytes) {
  switch (sniff_format(bytes)) {
    case ImageFormat::kPng:
      return png_info(bytes);
    case ImageFormat::kJpeg:
      return jpeg_info(bytes);
    case ImageFormat::kBmp:
      return bmp_info(bytes);
    case ImageFormat::kGif:
      return gif_info(bytes);
    case ImageFormat::kUnknown:
      break;
  }
  throw_unknown(bytes);
}

DecodedRegion decode_region(std::string_view bytes, const DecodeOptions& o) {
  check_channels(o.channels, "decode_region");
  switch (sniff_format(bytes)) {
    case ImageFormat::kPng: {
      DecodedRegion r;
      r.image = decode_png(bytes, o.channels);
      return r;
    }
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, o);
    case ImageFormat::kBmp:
    case ImageFormat::kGif: {
      DecodedRegion r;
      r.image = sniff_format(bytes) == ImageFormat::kBmp ? decode_bmp(bytes, o.channels)
                                                         : decode_gif(bytes, o.channels);
      return r;
    }
    case ImageFormat::kUnknown:
      break;
  }
  throw_unknown(bytes);
}

std::string encode_png(const Image& img) {
  if ((img.channels != 1 && img.channels != 3) || img.height <= 0 || img.width <= 0 ||
      img.pixels.size() != size_t(img.height) * size_t(img.width) * size_t(img.channels)) {
    throw std::invalid_argument(
        "encode_png: need a non-empty 1- or 3-channel image with "
        "height*width*channels pixels");
  }
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(img.width);
  image.height = static_cast<png_uint_32>(img.height);
  image.format = img.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, img.pixels.data(), 0, nullptr)) {
    std::string reason = image.message;
    png_image_free(&image);
    throw DataError("cannot encode PNG: " + reason);
  }
  out.resize(size);
  return out;
}

namespace {

// C-style for the same reason as decode_jpeg_into.
bool encode_jpeg_into(const Image& img, int quality, unsigned char** buffer, unsigned long* size,
                      char* message) {
  jpeg_compress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_compress(&cinfo);
    std::memcpy(message, err.message, JMSG_LENGTH_MAX);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buffer, size);
  cinfo.image_width = static_cast<JDIMENSION>(img.width);
  cinfo.image_height = static_cast<JDIMENSION>(img.height);
  cinfo.input_components = img.channels;
  cinfo.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = size_t(img.width) * img.channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(img.pixels.data()) + cinfo.next_scanline * stride;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

std::string encode_jpeg(const Image& img, int quality) {
  if ((img.channels != 1 && img.channels != 3) || img.height <= 0 || img.width <= 0 ||
      quality < 1 || quality > 100 ||
      img.pixels.size() != size_t(img.height) * size_t(img.width) * size_t(img.channels)) {
    throw std::invalid_argument(
        "encode_jpeg: need a non-empty 1- or 3-channel image with "
        "height*width*channels pixels and quality in [1, 100]");
  }
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  char message[JMSG_LENGTH_MAX];
  const bool ok = encode_jpeg_into(img, quality, &buffer, &size, message);
  std::string out = ok ? std::string(reinterpret_cast<char*>(buffer), size) : std::string();
  std::free(buffer);
  if (!ok) throw DataError(std::string("cannot encode JPEG: ") + message);
  return out;
}

}  // namespace fastnn::io
