#include "preprocessing/image_ops.h"

#include <algorithm>
#include <cmath>

namespace fastnn::preprocessing {

FloatImage to_float(const io::Image& in, float scale) {
  FloatImage out{in.height, in.width, in.channels, {}};
  out.data.resize(in.pixels.size());
  for (size_t i = 0; i < in.pixels.size(); ++i) out.data[i] = in.pixels[i] * scale;
  return out;
}

FloatImage crop(const FloatImage& in, int top, int left, int height, int width) {
  FloatImage out{height, width, in.channels, {}};
  out.data.resize(size_t(height) * width * in.channels);
  const size_t row = size_t(width) * in.channels;
  for (int y = 0; y < height; ++y) {
    const float* src = &in.data[(size_t(top + y) * in.width + left) * in.channels];
    std::copy(src, src + row, out.data.begin() + y * row);
  }
  return out;
}

FloatImage resize_bilinear(const FloatImage& in, int height, int width) {
  FloatImage out{height, width, in.channels, {}};
  out.data.resize(size_t(height) * width * in.channels);
  const float sy = static_cast<float>(in.height) / height;
  const float sx = static_cast<float>(in.width) / width;
  std::vector<int> x0(width), x1(width);
  std::vector<float> fx(width);
  for (int x = 0; x < width; ++x) {
    const float src = x * sx;
    x0[x] = static_cast<int>(std::floor(src));
    x1[x] = std::min(x0[x] + 1, in.width - 1);
    fx[x] = src - x0[x];
  }
  for (int y = 0; y < height; ++y) {
    const float src = y * sy;
    const int y0 = static_cast<int>(std::floor(src));
    const int y1 = std::min(y0 + 1, in.height - 1);
    const float fy = src - y0;
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < in.channels; ++c) {
        const float top = in.at(y0, x0[x], c) + (in.at(y0, x1[x], c) - in.at(y0, x0[x], c)) * fx[x];
        const float bottom =
            in.at(y1, x0[x], c) + (in.at(y1, x1[x], c) - in.at(y1, x0[x], c)) * fx[x];
        out.at(y, x, c) = top + (bottom - top) * fy;
      }
    }
  }
  return out;
}

FloatImage central_crop(const FloatImage& in, double fraction) {
  // As tf.image.central_crop: the start offset is int((size - size*f)/2).
  const int off_h = static_cast<int>((in.height - in.height * fraction) / 2);
  const int off_w = static_cast<int>((in.width - in.width * fraction) / 2);
  return crop(in, off_h, off_w, in.height - 2 * off_h, in.width - 2 * off_w);
}

FloatImage crop_or_pad(const FloatImage& in, int height, int width) {
  FloatImage out{height, width, in.channels, {}};
  out.data.assign(size_t(height) * width * in.channels, 0.0f);
  const int dy = (in.height - height) / 2, dx = (in.width - width) / 2;
  for (int y = 0; y < height; ++y) {
    const int sy = y + dy;
    if (sy < 0 || sy >= in.height) continue;
    for (int x = 0; x < width; ++x) {
      const int sx = x + dx;
      if (sx < 0 || sx >= in.width) continue;
      for (int c = 0; c < in.channels; ++c) out.at(y, x, c) = in.at(sy, sx, c);
    }
  }
  return out;
}

FloatImage pad(const FloatImage& in, int p) {
  FloatImage out{in.height + 2 * p, in.width + 2 * p, in.channels, {}};
  out.data.assign(size_t(out.height) * out.width * in.channels, 0.0f);
  for (int y = 0; y < in.height; ++y) {
    for (int x = 0; x < in.width; ++x) {
      for (int c = 0; c < in.channels; ++c) out.at(y + p, x + p, c) = in.at(y, x, c);
    }
  }
  return out;
}

void flip_left_right(FloatImage& img) {
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width / 2; ++x) {
      for (int c = 0; c < img.channels; ++c) {
        std::swap(img.at(y, x, c), img.at(y, img.width - 1 - x, c));
      }
    }
  }
}

void saturate_pixel(float* rgb, float factor) { saturate_rgb(rgb[0], rgb[1], rgb[2], factor); }

void adjust_saturation(FloatImage& img, float factor) {
  if (img.channels != 3) return;
  for (size_t i = 0; i < img.data.size(); i += 3) {
    saturate_pixel(&img.data[i], factor);
  }
}

void adjust_contrast(FloatImage& img, float factor) {
  const size_t pixels = size_t(img.height) * img.width;
  for (int c = 0; c < img.channels; ++c) {
    double sum = 0;
    for (size_t i = 0; i < pixels; ++i) sum += img.data[i * img.channels + c];
    const float mean = static_cast<float>(sum / pixels);
    for (size_t i = 0; i < pixels; ++i) {
      float& v = img.data[i * img.channels + c];
      v = (v - mean) * factor + mean;
    }
  }
}

void per_image_standardization(FloatImage& img) {
  const double n = static_cast<double>(img.data.size());
  double sum = 0, sq = 0;
  for (float v : img.data) {
    sum += v;
    sq += double(v) * v;
  }
  const double mean = sum / n;
  const double var = std::max(0.0, sq / n - mean * mean);
  const double adjusted = std::max(std::sqrt(var), 1.0 / std::sqrt(n));
  for (float& v : img.data) v = static_cast<float>((v - mean) / adjusted);
}

void adjust_brightness(FloatImage& img, float delta) {
  for (float& v : img.data) v += delta;
}

void clip(FloatImage& img, float lo, float hi) {
  for (float& v : img.data) v = std::clamp(v, lo, hi);
}

void affine(FloatImage& img, float add, float mul) {
  for (float& v : img.data) v = (v + add) * mul;
}

void subtract_means(FloatImage& img, const std::vector<float>& means) {
  for (size_t i = 0; i < img.data.size(); ++i) img.data[i] -= means[i % img.channels];
}

float uniform(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

Window sample_distorted_box(int height, int width, std::mt19937_64& rng, double min_covered,
                            double min_aspect, double max_aspect, double min_area, double max_area,
                            int max_attempts) {
  const double area = double(height) * width;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    const double aspect = std::uniform_real_distribution<double>(min_aspect, max_aspect)(rng);
    const double target = area * std::uniform_real_distribution<double>(min_area, max_area)(rng);
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    const int w = static_cast<int>(std::lround(h * aspect));
    if (h < 1 || w < 1 || h > height || w > width) continue;
    if (double(h) * w < min_covered * area) continue;
    Window win;
    win.height = h;
    win.width = w;
    win.top = std::uniform_int_distribution<int>(0, height - h)(rng);
    win.left = std::uniform_int_distribution<int>(0, width - w)(rng);
    return win;
  }
  return {0, 0, height, width};
}

namespace {

// One axis of resize_window_bilinear: for each output index, the two source
// indices (relative to the decoded region) and the weight of the second.
struct Taps {
  std::vector<int> i0, i1;
  std::vector<float> frac;
};

Taps window_taps(int start, int length, int out_length, int scale_num, int origin, int decoded) {
  Taps t;
  t.i0.resize(out_length);
  t.i1.resize(out_length);
  t.frac.resize(out_length);
  const float step = static_cast<float>(length) / out_length;
  const double s = scale_num / 8.0;
  const int64_t end = (int64_t{start + length} * scale_num + 7) / 8;
  const int last = static_cast<int>(std::min<int64_t>(end - 1 - origin, decoded - 1));
  for (int i = 0; i < out_length; ++i) {
    const float c = i * step;
    const double pos =
        scale_num == 8 ? start + double(c) - origin : (start + double(c)) * s - origin;
    int i0 = static_cast<int>(std::floor(pos));
    i0 = std::clamp(i0, 0, last);
    t.i0[i] = i0;
    t.i1[i] = std::min(i0 + 1, last);
    t.frac[i] = static_cast<float>(pos - i0);
  }
  return t;
}

}  // namespace

FASTNN_VECTOR_CLONES
void resize_window_bilinear(const io::DecodedRegion& src, const Window& box, int height, int width,
                            float* out, const std::function<void(int out_row)>& after_row) {
  const io::Image& img = src.image;
  const int ch = img.channels;
  const Taps ty =
      window_taps(box.top, box.height, height, src.scale_num, src.origin_top, img.height);
  const Taps tx =
      window_taps(box.left, box.width, width, src.scale_num, src.origin_left, img.width);
  // TensorFlow's arithmetic, bit for bit at scale 8/8: the values converted
  // as convert_image_dtype does (v * (1/255) in float), each of the two
  // source rows blended horizontally, then the two vertically
  // (resize_bilinear_op.cc's compute_lerp). A source row's horizontal blend
  // goes to planes (so that the vertical blend is a loop that vectorizes)
  // and is kept for the next output row, which often reads it again.
  const int first = tx.i0.front(), last = tx.i1.back();
  const size_t span = size_t(last - first + 1) * ch;
  std::vector<int> x0(width), x1(width);
  for (int col = 0; col < width; ++col) {
    x0[col] = (tx.i0[col] - first) * ch;
    x1[col] = (tx.i1[col] - first) * ch;
  }
  std::vector<float> unit(span);
  struct Blended {
    int row = -1;
    std::vector<float> planes;
  };
  Blended slot[2];
  for (auto& blend : slot) blend.planes.resize(size_t(width) * ch);
  const size_t stride = size_t(img.width) * ch;
  const size_t plane = size_t(height) * width;
  // The horizontal blend of source row `row`, in the slot not holding `keep`.
  auto blended = [&](int row, int keep) -> const float* {
    for (const auto& blend : slot) {
      if (blend.row == row) return blend.planes.data();
    }
    Blended& blend = slot[0].row == keep ? slot[1] : slot[0];
    const uint8_t* source_row = img.pixels.data() + row * stride + size_t(first) * ch;
    for (size_t k = 0; k < span; ++k) unit[k] = static_cast<float>(source_row[k]) * (1.0f / 255.0f);
    float* dst = blend.planes.data();
    if (ch == 3) {
      for (int col = 0; col < width; ++col) {
        const float* left = &unit[x0[col]];
        const float* right = &unit[x1[col]];
        const float frac = tx.frac[col];
        dst[col] = left[0] + (right[0] - left[0]) * frac;
        dst[width + col] = left[1] + (right[1] - left[1]) * frac;
        dst[2 * width + col] = left[2] + (right[2] - left[2]) * frac;
      }
    } else {
      for (int channel = 0; channel < ch; ++channel, dst += width) {
        for (int col = 0; col < width; ++col) {
          const float left = unit[x0[col] + channel], right = unit[x1[col] + channel];
          dst[col] = left + (right - left) * tx.frac[col];
        }
      }
    }
    blend.row = row;
    return blend.planes.data();
  };
  for (int out_row = 0; out_row < height; ++out_row) {
    const float* top = blended(ty.i0[out_row], ty.i1[out_row]);
    const float* bottom = blended(ty.i1[out_row], ty.i0[out_row]);
    const float fy = ty.frac[out_row];
    for (int channel = 0; channel < ch; ++channel) {
      const float* top_plane = top + size_t(channel) * width;
      const float* bottom_plane = bottom + size_t(channel) * width;
      float* dst = out + size_t(channel) * plane + size_t(out_row) * width;
      for (int col = 0; col < width; ++col)
        dst[col] = top_plane[col] + (bottom_plane[col] - top_plane[col]) * fy;
    }
    if (after_row) after_row(out_row);
  }
}

void write_chw(const FloatImage& img, float* out) {
  const size_t plane = size_t(img.height) * img.width;
  for (size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < img.channels; ++c) {
      out[c * plane + i] = img.data[i * img.channels + c];
    }
  }
}

}  // namespace fastnn::preprocessing
