// Float image operations with TensorFlow 1.x semantics, used by the
// TF-slim preprocessing functions. Images are HWC float; no LibTorch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "preprocessing/preprocessing_factory.h"
#include "src/compat/vector_clones.h"
#include "src/io/image.h"

// Per-pixel loops: FASTNN_VECTOR_CLONES (src/compat/vector_clones.h).

namespace fastnn::preprocessing {

/// HWC float image.
struct FloatImage {
  int height = 0, width = 0, channels = 0;
  std::vector<float> data;
  float& at(int y, int x, int c) { return data[(size_t(y) * width + x) * channels + c]; }
  float at(int y, int x, int c) const { return data[(size_t(y) * width + x) * channels + c]; }
};

/// uint8 -> float times `scale` (1/255 for convert_image_dtype, 1 for
/// tf.to_float).
FloatImage to_float(const io::Image& in, float scale);

/// tf.image.crop_to_bounding_box (REQUIRES: inside the image).
FloatImage crop(const FloatImage& in, int top, int left, int height, int width);

/// TF1 resize_bilinear, align_corners=False, half_pixel_centers=False:
/// source coordinate = destination * (in / out).
FloatImage resize_bilinear(const FloatImage& in, int height, int width);

/// tf.image.central_crop(image, fraction).
FloatImage central_crop(const FloatImage& in, double fraction);

/// tf.image.resize_image_with_crop_or_pad: centred crop / zero padding.
FloatImage crop_or_pad(const FloatImage& in, int height, int width);

/// Zero padding of `pad` pixels on every side.
FloatImage pad(const FloatImage& in, int pad);

void flip_left_right(FloatImage& img);

/// tf.image.adjust_saturation: RGB -> HSV, S *= factor (clipped), back.
void adjust_saturation(FloatImage& img, float factor);

/// tf.image.adjust_contrast: per channel (x - mean) * factor + mean.
void adjust_contrast(FloatImage& img, float factor);

/// tf.image.per_image_standardization: (x - mean) / max(std, 1/sqrt(N)).
void per_image_standardization(FloatImage& img);

/// Adds `delta` to every value.
void adjust_brightness(FloatImage& img, float delta);

void clip(FloatImage& img, float lo, float hi);

/// y = (x + add) * mul on every value.
void affine(FloatImage& img, float add, float mul);

/// Per-channel subtraction (VGG means).
void subtract_means(FloatImage& img, const std::vector<float>& means);

/// A crop window: top, left, height, width.
struct Window {
  int top = 0, left = 0, height = 0, width = 0;
};

/// TF's sample_distorted_bounding_box with the whole image as the box:
/// aspect ratio uniform in [min_aspect, max_aspect], area fraction in
/// [min_area, max_area], covering at least min_covered of the image;
/// the whole image after max_attempts failures.
Window sample_distorted_box(int height, int width, std::mt19937_64& rng, double min_covered = 0.1,
                            double min_aspect = 0.75, double max_aspect = 1.33,
                            double min_area = 0.05, double max_area = 1.0, int max_attempts = 100);

/// TF1 resize_bilinear (as resize_bilinear) of the window `box`, given in
/// original-image pixels, of an image of which `src` holds a part decoded at
/// scale src.scale_num/8. Source positions are computed in the window's
/// original coordinates and then scaled, so at scale 8/8 this equals
/// crop + resize_bilinear exactly. Writes channels planes of height*width
/// floats (CHW) in [0, 1] (convert_image_dtype's v * (1/255)) to `out`;
/// at scale 8/8 bit for bit TensorFlow's convert_image_dtype + slice +
/// legacy resize_bilinear. `after_row(y)`, when
/// given, runs as soon as row y of every plane is written (while it is in
/// L1 cache), for per-pixel work that follows the resize.
void resize_window_bilinear(const io::DecodedRegion& src, const Window& box, int height, int width,
                            float* out, const std::function<void(int y)>& after_row = {});

/// tf.image.adjust_saturation on one RGB pixel, in closed form: the HSV
/// round trip keeps hue and value, so each channel c becomes
/// v - (v - c) * s'/s with s' = clip(s * factor, 0, 1); v <= 0 gives gray v.
void saturate_pixel(float* rgb, float factor);

/// saturate_pixel's arithmetic, inline so that loops over planes
/// vectorize: with s = range / v, clip(s * factor, 0, 1) / s equals
/// min(factor, v / range); range == 0 leaves the pixel as is, and v <= 0
/// makes it gray v (ratio 0).
///
/// TensorFlow's quirk, reproduced: its kernel (adjust_saturation_op.cc)
/// takes the hue norm * (g - b), norm = 1 / (6 range), when r is the largest,
/// and adds 1 when it is negative; a hue that rounds to 1.0 falls in no
/// sector of its HSV -> RGB switch, which leaves every channel at
/// m = v - s' v: the pixel turns gray. That is a red pixel whose green lies
/// below its blue by less than about 2e-7 of its range (after a bilinear
/// resize, a gray-green-blue pair one float apart; the TensorFlow oracle,
/// tests/tf_oracle/preprocessing.py, met 1-2 in 50,000 pixels).
inline void saturate_rgb(float& r, float& g, float& b, float factor) {
  // Plain selects and no branch around the division, so that loops over
  // planes vectorize (with -fno-trapping-math, set for this library).
  const float hi = r > g ? r : g, lo = r < g ? r : g;
  const float v = hi > b ? hi : b;
  const float range = v - (lo < b ? lo : b);
  const float safe_range = range > 1e-30f ? range : 1e-30f;
  const float positive = v > 0.0f ? v : 0.0f;
  const float inverse_s = positive / safe_range;
  const float ratio = factor < inverse_s ? factor : inverse_s;
  const float hue = 1.0f / (6.0f * safe_range) * (g - b);
  const bool gray = r == v && range > 0.0f && hue < 0.0f && hue + 1.0f == 1.0f;
  const float m = v - range * ratio;
  r = gray ? m : v - (v - r) * ratio;
  g = gray ? m : v - (v - g) * ratio;
  b = gray ? m : v - (v - b) * ratio;
}

/// Writes HWC `img` as CHW floats to `out`. REQUIRES: shape matches.
void write_chw(const FloatImage& img, float* out);

/// Uniform float in [lo, hi).
float uniform(std::mt19937_64& rng, float lo, float hi);

}  // namespace fastnn::preprocessing
