// TF-slim's lenet_preprocessing: to float, resize_image_with_crop_or_pad to
// HxW (centred crop, zero padding), then (x - 128) / 128. Train and eval
// are the same.
#pragma once

#include "preprocessing/preprocessing_factory.h"

namespace fastnn::preprocessing {

void lenet_preprocess(const io::Image& in, const OutputShape& shape, float* out);

/// TF's resize_image_with_crop_or_pad on one channel plane: centred crop
/// of the larger side, centred zero padding of the smaller; `fn` maps the
/// uint8 value to the output float.
template <typename Fn>
void crop_or_pad_plane(const io::Image& in, int c, const OutputShape& shape, float pad_value, Fn fn,
                       float* out) {
  const int off_h = (in.height - shape.height) / 2;
  const int off_w = (in.width - shape.width) / 2;
  for (int y = 0; y < shape.height; ++y) {
    const int sy = y + off_h;
    for (int x = 0; x < shape.width; ++x) {
      const int sx = x + off_w;
      const bool inside = sy >= 0 && sy < in.height && sx >= 0 && sx < in.width;
      out[y * shape.width + x] =
          inside ? fn(in.pixels[(size_t(sy) * in.width + sx) * in.channels + c]) : pad_value;
    }
  }
}

}  // namespace fastnn::preprocessing
