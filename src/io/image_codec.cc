#include "fastnn/image.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <stdexcept>

#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

// Upper bound on decoded pixels, so a forged header cannot demand gigabytes.
constexpr uint64_t kMaxPixels = uint64_t{1} << 28;

constexpr unsigned char kPngMagic[] = {
    0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
constexpr unsigned char kJpegMagic[] = {0xFF, 0xD8, 0xFF};

bool starts_with(std::string_view bytes, const unsigned char* magic, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

bool size_ok(uint64_t width, uint64_t height) {
  return width > 0 && height > 0 && width * height <= kMaxPixels;
}

std::string size_error(uint64_t width, uint64_t height) {
  return "size " + std::to_string(width) + "x" + std::to_string(height) +
         " is empty or too large";
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
  ~PngImageFree() {
    png_image_free(image);
  }
};

Image decode_png(std::string_view bytes, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  PngImageFree guard{&image};
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    throw DataError(std::string("undecodable PNG: ") + image.message);
  }
  if (!size_ok(image.width, image.height)) {
    throw DataError("undecodable PNG: " +
                    size_error(image.width, image.height));
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
  image.format = (out.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY) |
                 (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
  out.pixels.resize(size_t{image.width} * image.height *
                    (out.channels + (alpha ? 1 : 0)));
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
// otherwise pad the image with gray and report success.
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    jpeg_fail(cinfo);
  }
}

uint8_t cmyk_channel(int c, int k, bool inverted) {
  int v = inverted ? c * k : (255 - c) * (255 - k);
  return static_cast<uint8_t>((v + 127) / 255);
}

// Converts one row of CMYK (as libjpeg returns it) to gray or RGB.
void cmyk_row(
    const uint8_t* in, int width, int channels, bool adobe, uint8_t* out) {
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

// C-style on purpose: no object with a destructor lives across the setjmp,
// so longjmp out of libjpeg is well defined. Returns false with *message set
// when libjpeg reports an error.
bool decode_jpeg_into(std::string_view bytes,
                      int channels,
                      Image* out,
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
  jpeg_mem_src(&cinfo,
               reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (!size_ok(cinfo.image_width, cinfo.image_height)) {
    std::snprintf(message,
                  JMSG_LENGTH_MAX,
                  "%s",
                  size_error(cinfo.image_width, cinfo.image_height).c_str());
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const J_COLOR_SPACE stored = cinfo.jpeg_color_space;
  const bool cmyk = stored == JCS_CMYK || stored == JCS_YCCK;
  const int out_channels =
      channels != 0 ? channels : (stored == JCS_GRAYSCALE ? 1 : 3);
  if (cmyk) {
    cinfo.out_color_space = JCS_CMYK;
  } else {
    cinfo.out_color_space = out_channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  }
  jpeg_start_decompress(&cinfo);
  try {
    out->height = static_cast<int>(cinfo.output_height);
    out->width = static_cast<int>(cinfo.output_width);
    out->channels = out_channels;
    out->pixels.resize(size_t{cinfo.output_width} * cinfo.output_height *
                       out_channels);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  const size_t stride = size_t{cinfo.output_width} * out_channels;
  JSAMPARRAY cmyk_buffer =
      cmyk ? (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                        JPOOL_IMAGE,
                                        cinfo.output_width * 4,
                                        1)
           : nullptr;
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* row = out->pixels.data() + cinfo.output_scanline * stride;
    if (cmyk) {
      jpeg_read_scanlines(&cinfo, cmyk_buffer, 1);
      cmyk_row(cmyk_buffer[0],
               out->width,
               out_channels,
               cinfo.saw_Adobe_marker != 0,
               row);
    } else {
      JSAMPROW rows[1] = {row};
      jpeg_read_scanlines(&cinfo, rows, 1);
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Image decode_jpeg(std::string_view bytes, int channels) {
  Image out;
  char message[JMSG_LENGTH_MAX];
  if (!decode_jpeg_into(bytes, channels, &out, message)) {
    throw DataError(std::string("undecodable JPEG: ") + message);
  }
  return out;
}

}  // namespace

ImageFormat sniff_format(std::string_view bytes) {
  if (starts_with(bytes, kPngMagic, sizeof(kPngMagic))) {
    return ImageFormat::kPng;
  }
  if (starts_with(bytes, kJpegMagic, sizeof(kJpegMagic))) {
    return ImageFormat::kJpeg;
  }
  return ImageFormat::kUnknown;
}

Image decode_image(std::string_view bytes, int channels) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw std::invalid_argument(
        "decode_image: channels must be 0, 1 or 3, got " +
        std::to_string(channels));
  }
  switch (sniff_format(bytes)) {
    case ImageFormat::kPng:
      return decode_png(bytes, channels);
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, channels);
    case ImageFormat::kUnknown:
      break;
  }
  std::string head;
  char hex[4];
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    std::snprintf(hex, sizeof(hex), " %02x", static_cast<uint8_t>(bytes[i]));
    head += hex;
  }
  throw DataError("undecodable image: neither PNG nor JPEG (" +
                  std::to_string(bytes.size()) + " bytes" +
                  (head.empty() ? "" : ", starting" + head) + ")");
}

std::string encode_png(const Image& img) {
  if ((img.channels != 1 && img.channels != 3) || img.height <= 0 ||
      img.width <= 0 ||
      img.pixels.size() !=
          size_t(img.height) * size_t(img.width) * size_t(img.channels)) {
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
  if (!png_image_write_to_memory(
          &image, out.data(), &size, 0, img.pixels.data(), 0, nullptr)) {
    std::string reason = image.message;
    png_image_free(&image);
    throw DataError("cannot encode PNG: " + reason);
  }
  out.resize(size);
  return out;
}

}  // namespace fastnn::io
