#include "preprocessing/slim_preprocessing.h"

#include <algorithm>
#include <cmath>

#include "fastnn/errors.h"

namespace fastnn::preprocessing {
namespace {

const std::vector<float> kVggMeans = {123.68f, 116.78f, 103.94f};
constexpr int kCifarPadding = 4;

void check_channels(const io::Image& in, const OutputShape& s, const char* name) {
  if (in.channels != s.channels) {
    throw DataError(std::string(name) + " preprocessing: image has " + std::to_string(in.channels) +
                    " channels, expected " + std::to_string(s.channels));
  }
}

bool coin(std::mt19937_64& rng) { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; }

// A random h x w window of a height x width image (tf.random_crop).
Window random_window(int height, int width, int h, int w, std::mt19937_64& rng) {
  if (height < h || width < w) {
    throw DataError("random crop: image " + std::to_string(height) + "x" + std::to_string(width) +
                    " is smaller than the crop");
  }
  Window win;
  win.top = std::uniform_int_distribution<int>(0, height - h)(rng);
  win.left = std::uniform_int_distribution<int>(0, width - w)(rng);
  win.height = h;
  win.width = w;
  return win;
}

FloatImage crop(const FloatImage& in, const Window& w) {
  return crop(in, w.top, w.left, w.height, w.width);
}

}  // namespace

Window smallest_side_size(int height, int width, int side) {
  // float32 and round-half-to-even, as TensorFlow: a double scale or
  // std::lround gives another size for, e.g., 16x22 to 300 (412.5).
  const float scale = static_cast<float>(side) / static_cast<float>(std::min(height, width));
  Window size;
  size.height = static_cast<int>(std::nearbyint(static_cast<float>(height) * scale));
  size.width = static_cast<int>(std::nearbyint(static_cast<float>(width) * scale));
  return size;
}

FloatImage aspect_preserving_resize(const FloatImage& in, int side) {
  const Window size = smallest_side_size(in.height, in.width, side);
  return resize_bilinear(in, size.height, size.width);
}

Draws inception_draws(int height, int width, std::mt19937_64& rng) {
  Draws d;
  d.crop = sample_distorted_box(height, width, rng);
  d.flip = coin(rng);
  d.brightness = uniform(rng, -32.0f / 255.0f, 32.0f / 255.0f);
  d.saturation = uniform(rng, 0.5f, 1.5f);
  return d;
}

Draws vgg_draws(int height, int width, const OutputShape& s, std::mt19937_64& rng) {
  Draws d;
  d.resize_side = std::uniform_int_distribution<int>(256, 512)(rng);
  const Window size = smallest_side_size(height, width, d.resize_side);
  d.crop = random_window(size.height, size.width, s.height, s.width, rng);
  d.flip = coin(rng);
  return d;
}

Draws cifarnet_draws(int height, int width, const OutputShape& s, std::mt19937_64& rng) {
  Draws d;
  d.crop =
      random_window(height + 2 * kCifarPadding, width + 2 * kCifarPadding, s.height, s.width, rng);
  d.flip = coin(rng);
  d.brightness = uniform(rng, -63.0f, 63.0f);
  d.contrast = uniform(rng, 0.2f, 1.8f);
  return d;
}

namespace {

// tf.image.central_crop's window (offsets int((size - size * f) / 2)).
Window central_window(int height, int width, double fraction) {
  const int off_h = static_cast<int>((height - height * fraction) / 2);
  const int off_w = static_cast<int>((width - width * fraction) / 2);
  return {off_h, off_w, height - 2 * off_h, width - 2 * off_w};
}

// Crop + resize, random flip, brightness, saturation, clip, (x - 0.5) * 2,
// computed on CHW planes in the output buffer (loops that vectorize).
float to_unit_range(float v) {
  const float low = v > 0.0f ? v : 0.0f;
  return ((low < 1.0f ? low : 1.0f) - 0.5f) * 2.0f;
}

// Brightness, saturation, clip and (x - 0.5) * 2 on n RGB pixels in planes.
FASTNN_VECTOR_CLONES
void inception_color(float* r, float* g, float* b, int n, float delta, float saturation) {
  for (int x = 0; x < n; ++x) {
    float vr = r[x] + delta;
    float vg = g[x] + delta;
    float vb = b[x] + delta;
    saturate_rgb(vr, vg, vb, saturation);
    r[x] = to_unit_range(vr);
    g[x] = to_unit_range(vg);
    b[x] = to_unit_range(vb);
  }
}

// Crop + resize, random flip, brightness, saturation, clip, (x - 0.5) * 2:
// each resized row gets the per-pixel work while still in cache.
void inception_train_region(const io::DecodedRegion& src, const Draws& draws,
                            const OutputShape& shape, std::mt19937_64& rng, float* out,
                            const AugmentFn& augment) {
  check_channels(src.image, shape, "inception");
  const bool flip = draws.flip;
  const float delta = draws.brightness;
  const float saturation = draws.saturation;
  const size_t plane = size_t(shape.height) * shape.width;
  const int ch = shape.channels;
  auto color = [&](int row) {
    float* row_start = out + size_t(row) * shape.width;
    if (ch == 3) {
      inception_color(row_start, row_start + plane, row_start + 2 * plane, shape.width, delta,
                      saturation);
    } else {
      for (int col = 0; col < shape.width; ++col) {
        row_start[col] = to_unit_range(row_start[col] + delta);
      }
    }
  };
  auto flip_row = [&](int row) {
    float* row_start = out + size_t(row) * shape.width;
    for (int channel = 0; channel < ch; ++channel)
      std::reverse(row_start + channel * plane, row_start + channel * plane + shape.width);
  };
  if (!augment) {
    resize_window_bilinear(src, draws.crop, shape.height, shape.width, out, [&](int row) {
      color(row);
      if (flip) flip_row(row);
    });
    return;
  }
  resize_window_bilinear(src, draws.crop, shape.height, shape.width, out);
  if (flip) {
    for (int row = 0; row < shape.height; ++row) flip_row(row);
  }
  ByteImage bytes = bytes_from_chw(out, ch, shape.height, shape.width);
  augment(bytes, rng);
  bytes_to_chw(bytes, out);
  for (int row = 0; row < shape.height; ++row) color(row);
}

void inception_eval_region(const io::DecodedRegion& src, const Window& box, const OutputShape& s,
                           float* out) {
  check_channels(src.image, s, "inception");
  resize_window_bilinear(src, box, s.height, s.width, out);
  const size_t n = size_t(s.numel());
  for (size_t i = 0; i < n; ++i) out[i] = (out[i] - 0.5f) * 2.0f;
}

io::DecodeOptions region_options(const EncodedImage& in, const Window& box, const OutputShape& s,
                                 bool fast) {
  io::DecodeOptions o;
  o.channels = in.channels;
  if (fast) {
    o.crop_top = box.top;
    o.crop_left = box.left;
    o.crop_height = box.height;
    o.crop_width = box.width;
    o.min_height = s.height;
    o.min_width = s.width;
  }
  return o;
}

}  // namespace

void inception_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
                     const AugmentFn& augment) {
  const Draws d = inception_draws(in.height, in.width, rng);
  io::DecodedRegion whole;
  whole.image = in;
  inception_train_region(whole, d, s, rng, out, augment);
}

void inception_eval(const io::Image& in, const OutputShape& s, float* out) {
  io::DecodedRegion whole;
  whole.image = in;
  inception_eval_region(whole, central_window(in.height, in.width, 0.875), s, out);
}

void inception_train(const EncodedImage& in, const OutputShape& s, bool fast, std::mt19937_64& rng,
                     float* out, const AugmentFn& augment) {
  const io::ImageInfo info = io::read_image_info(in.bytes);
  const Draws d = inception_draws(info.height, info.width, rng);
  inception_train_region(io::decode_region(in.bytes, region_options(in, d.crop, s, fast)), d, s,
                         rng, out, augment);
}

void inception_eval(const EncodedImage& in, const OutputShape& s, bool fast, float* out) {
  const io::ImageInfo info = io::read_image_info(in.bytes);
  const Window box = central_window(info.height, info.width, 0.875);
  inception_eval_region(io::decode_region(in.bytes, region_options(in, box, s, fast)), box, s, out);
}

void vgg_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
               const AugmentFn& augment) {
  check_channels(in, s, "vgg");
  const Draws d = vgg_draws(in.height, in.width, s, rng);
  FloatImage img = crop(aspect_preserving_resize(to_float(in, 1.0f), d.resize_side), d.crop);
  if (d.flip) flip_left_right(img);
  if (augment) augment_hwc(img.data.data(), img.channels, img.height, img.width, augment, rng);
  subtract_means(img, kVggMeans);
  write_chw(img, out);
}

void vgg_eval(const io::Image& in, const OutputShape& s, float* out) {
  check_channels(in, s, "vgg");
  FloatImage img = aspect_preserving_resize(to_float(in, 1.0f), 256);
  img = crop(img, (img.height - s.height) / 2, (img.width - s.width) / 2, s.height, s.width);
  subtract_means(img, kVggMeans);
  write_chw(img, out);
}

void cifarnet_train(const io::Image& in, const OutputShape& s, std::mt19937_64& rng, float* out,
                    const AugmentFn& augment) {
  check_channels(in, s, "cifarnet");
  const Draws d = cifarnet_draws(in.height, in.width, s, rng);
  FloatImage img = crop(pad(to_float(in, 1.0f), kCifarPadding), d.crop);
  if (d.flip) flip_left_right(img);
  if (augment) augment_hwc(img.data.data(), img.channels, img.height, img.width, augment, rng);
  adjust_brightness(img, d.brightness);
  adjust_contrast(img, d.contrast);
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
