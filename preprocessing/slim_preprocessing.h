// TF-slim's inception, vgg and cifarnet preprocessing (research/slim/
// preprocessing/*_preprocessing.py), train and eval variants, as FastNN
// calls them (inception with fast_mode=True).
//
// inception train: to [0,1]; distorted bounding-box crop (cover >= 0.1,
//   aspect [0.75, 1.33], area [0.05, 1]); bilinear resize; random flip;
//   brightness +-32/255 then saturation [0.5, 1.5]; clip; (x - 0.5) * 2.
// inception eval: to [0,1]; central crop 0.875; bilinear resize; (x-0.5)*2.
// vgg train: smallest side to a random int in [256, 512]; random crop;
//   random flip; subtract the RGB means 123.68, 116.78, 103.94.
// vgg eval: smallest side to 256; central crop; subtract the means.
// cifarnet train: pad 4; random crop; random flip; brightness +-63;
//   contrast [0.2, 1.8]; per-image standardization.
// cifarnet eval: crop or pad to size; per-image standardization.
//
// `augment`, when set, runs on the image rounded to uint8 right after the
// random crop and flip (before colour distortion, mean subtraction or
// standardization), where torchvision's reference recipes run their
// policies; it draws from the same generator, after the TF-slim draws.
// Unset, nothing is rounded and the numbers are TF-slim's.
#pragma once

#include "preprocessing/augment.h"
#include "preprocessing/image_ops.h"

namespace fastnn::preprocessing {

/// The random draws of one training image, all taken before any pixel work
/// and in this order by the *_draws function of each preprocessing (so that
/// the TensorFlow oracle, tests/tf_oracle/, can give TF's ops the same ones).
struct Draws {
  /// vgg: the smallest side, uniform in [256, 512].
  int resize_side = 0;
  /// inception: the distorted bounding box in original-image pixels; vgg:
  /// the random crop of the resized image; cifarnet: of the padded one.
  Window crop;
  bool flip = false;
  /// inception: uniform in [-32/255, 32/255); cifarnet: in [-63, 63).
  float brightness = 0.0f;
  /// inception: uniform in [0.5, 1.5).
  float saturation = 1.0f;
  /// cifarnet: uniform in [0.2, 1.8).
  float contrast = 1.0f;
};

/// The draws `inception_train`, `vgg_train` and `cifarnet_train` take from
/// `rng` for an image of height x width (original pixels, before decoding).
/// vgg and cifarnet throw DataError when the image is smaller than the crop.
Draws inception_draws(int height, int width, std::mt19937_64& rng);
Draws vgg_draws(int height, int width, const OutputShape& s, std::mt19937_64& rng);
Draws cifarnet_draws(int height, int width, const OutputShape& s, std::mt19937_64& rng);

void inception_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
                     const AugmentFn& augment = {});
void inception_eval(const io::Image& in, const OutputShape& s, float* out);

/// Inception from encoded bytes: the crop is drawn from the header's size
/// (original-image coordinates, as TF-slim), then with `fast` only that
/// region is decoded, at the smallest JPEG DCT scale n/8 that keeps it at
/// least s.height x s.width; without `fast` the whole image is decoded.
/// Same random draws, in the same order, as the io::Image overloads.
void inception_train(const EncodedImage& in, const OutputShape& s, bool fast, std::mt19937_64& rng,
                     float* out, const AugmentFn& augment = {});
void inception_eval(const EncodedImage& in, const OutputShape& s, bool fast, float* out);
void vgg_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
               const AugmentFn& augment = {});
void vgg_eval(const io::Image& in, const OutputShape& s, float* out);
void cifarnet_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
                    const AugmentFn& augment = {});
void cifarnet_eval(const io::Image& in, const OutputShape& s, float* out);

/// VGG's smallest-side resize: the shorter side becomes `side`, the other
/// keeps the aspect ratio (TF-slim's _aspect_preserving_resize).
FloatImage aspect_preserving_resize(const FloatImage& in, int side);

/// That resize's output size, as TF-slim's _smallest_size_at_least computes
/// it: in float32, scale = side / shorter, size = rint(size * scale) (half
/// to even).
Window smallest_side_size(int height, int width, int side);

}  // namespace fastnn::preprocessing
