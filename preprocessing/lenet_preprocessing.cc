#include "preprocessing/lenet_preprocessing.h"

#include "fastnn/errors.h"

namespace fastnn::preprocessing {

void lenet_preprocess(const io::Image& in, const OutputShape& shape, float* out) {
  if (in.channels != shape.channels) {
    throw DataError("lenet preprocessing: image has " + std::to_string(in.channels) +
                    " channels, expected " + std::to_string(shape.channels));
  }
  const float pad = (0.0f - 128.0f) / 128.0f;
  auto scale = [](uint8_t v) { return (static_cast<float>(v) - 128.0f) / 128.0f; };
  const int64_t plane = int64_t{shape.height} * shape.width;
  for (int c = 0; c < shape.channels; ++c) {
    crop_or_pad_plane(in, c, shape, pad, scale, out + c * plane);
  }
}

}  // namespace fastnn::preprocessing
