#include "preprocessing/slim_preprocessing.h"

#include <cmath>

#include "fastnn/errors.h"

namespace fastnn::preprocessing {
namespace {

const std::vector<float> kVggMeans = {123.68f, 116.78f, 103.94f};

void check_channels(const io::Image& in, const OutputShape& s, const char* name) {
  if (in.channels != s.channels) {
    throw DataError(std::string(name) + " preprocessing: image has " +
                    std::to_string(in.channels) + " channels, expected " +
                    std::to_string(s.channels));
  }
}

bool coin(std::mt19937_64& rng) {
  return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
}

FloatImage random_crop(const FloatImage& in, int h, int w, std::mt19937_64& rng) {
  if (in.height < h || in.width < w) {
    throw DataError("random crop: image " + std::to_string(in.height) + "x" +
                    std::to_string(in.width) + " is smaller than the crop");
  }
  const int top = std::uniform_int_distribution<int>(0, in.height - h)(rng);
  const int left = std::uniform_int_distribution<int>(0, in.width - w)(rng);
  return crop(in, top, left, h, w);
}

}  // namespace

FloatImage aspect_preserving_resize(const FloatImage& in, int side) {
  const double scale = static_cast<double>(side) / std::min(in.height, in.width);
  const int h = static_cast<int>(std::lround(in.height * scale));
  const int w = static_cast<int>(std::lround(in.width * scale));
  return resize_bilinear(in, h, w);
}

void inception_train(const io::Image& in, const OutputShape& s,
                     std::mt19937_64& rng, float* out) {
  check_channels(in, s, "inception");
  FloatImage img = to_float(in, 1.0f / 255.0f);
  const Window box = sample_distorted_box(img.height, img.width, rng);
  img = resize_bilinear(crop(img, box.top, box.left, box.height, box.width),
                        s.height, s.width);
  if (coin(rng)) flip_left_right(img);
  adjust_brightness(img, uniform(rng, -32.0f / 255.0f, 32.0f / 255.0f));
  adjust_saturation(img, uniform(rng, 0.5f, 1.5f));
  clip(img, 0.0f, 1.0f);
  affine(img, -0.5f, 2.0f);
  write_chw(img, out);
}

void inception_eval(const io::Image& in, const OutputShape& s, float* out) {
  check_channels(in, s, "inception");
  FloatImage img = central_crop(to_float(in, 1.0f / 255.0f), 0.875);
  img = resize_bilinear(img, s.height, s.width);
  affine(img, -0.5f, 2.0f);
  write_chw(img, out);
}

void vgg_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng,
               float* out) {
  check_channels(in, s, "vgg");
  const int side = std::uniform_int_distribution<int>(256, 512)(rng);
  FloatImage img = aspect_preserving_resize(to_float(in, 1.0f), side);
  img = random_crop(img, s.height, s.width, rng);
  if (coin(rng)) flip_left_right(img);
  subtract_means(img, kVggMeans);
  write_chw(img, out);
}

void vgg_eval(const io::Image& in, const OutputShape& s, float* out) {
  check_channels(in, s, "vgg");
  FloatImage img = aspect_preserving_resize(to_float(in, 1.0f), 256);
  img = crop(img, (img.height - s.height) / 2, (img.width - s.width) / 2,
             s.height, s.width);
  subtract_means(img, kVggMeans);
  write_chw(img, out);
}

void cifarnet_train(const io::Image& in, const OutputShape& s,
                    std::mt19937_64& rng, float* out) {
  check_channels(in, s, "cifarnet");
  FloatImage img = pad(to_float(in, 1.0f), 4);
  img = random_crop(img, s.height, s.width, rng);
  if (coin(rng)) flip_left_right(img);
  adjust_brightness(img, uniform(rng, -63.0f, 63.0f));
  adjust_contrast(img, uniform(rng, 0.2f, 1.8f));
  per_image_standardization(img);
  write_chw(img, out);
}

void cifarnet_eval(const io::Image& in, const OutputShape& s, float* out) {
  check_channels(in, s, "cifarnet");
  FloatImage img = crop_or_pad(to_float(in, 1.0f), s.height, s.width);
  per_image_standardization(img);
  write_chw(img, out);
}

}  // namespace fastnn::preprocessing
