// JPEG/PNG/BMP/GIF decoding through the project's decoder, its size limit included:
// the whole image, forced gray and RGB, and a scaled region.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fastnn/errors.h"
#include "src/io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int channels : {0, 1, 3}) {
    try {
      auto img = fastnn::io::decode_image(bytes, channels);
      if (img.pixels.size() != size_t(img.height) * img.width * img.channels) std::abort();
    } catch (const fastnn::DataError&) {
    }
  }
  try {
    const auto info = fastnn::io::read_image_info(bytes);
    fastnn::io::DecodeOptions o;
    o.channels = 3;
    o.crop_height = info.height / 2;
    o.crop_width = info.width / 2;
    o.crop_top = info.height / 4;
    o.crop_left = info.width / 4;
    o.min_height = 8;
    o.min_width = 8;
    if (o.crop_height > 0 && o.crop_width > 0) fastnn::io::decode_region(bytes, o);
  } catch (const fastnn::DataError&) {
  }
  return 0;
}
