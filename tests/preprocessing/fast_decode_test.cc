// Inception preprocessing from encoded bytes: the fused crop+resize+color
// path equals TF-slim's op-by-op definition, and decoding only the crop at a
// reduced DCT scale (fast_jpeg_decode) stays within a stated tolerance of
// decoding the full image.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "preprocessing/slim_preprocessing.h"

namespace fastnn::preprocessing {
namespace {

// A 500x375-class "photo": smooth sinusoidal shading, a bright disc with a
// hard edge, and pixel noise, so JPEG blocks carry real detail.
io::Image photo(int h, int w, uint64_t seed) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = 3;
  img.pixels.resize(size_t(h) * w * 3);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> grain(0.0f, 6.0f);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool disc = std::hypot(x - w * 0.6, y - h * 0.4) < h * 0.25;
      for (int c = 0; c < 3; ++c) {
        float v = 110 + 60 * std::sin(x * 0.02f + c) * std::cos(y * 0.03f) + (disc ? 70.0f : 0.0f) +
                  grain(rng);
        img.pixels[(size_t(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
  return img;
}

struct Diff {
  double mean = 0, max = 0;
};

Diff compare(const std::vector<float>& a, const std::vector<float>& b) {
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(a[i] - b[i]);
    d.mean += e;
    d.max = std::max(d.max, e);
  }
  d.mean /= a.size();
  return d;
}

TEST(FastDecode, FusedInceptionTrainEqualsTheOpByOpDefinition) {
  const io::Image img = photo(75, 100, 1);
  const OutputShape s{3, 48, 48};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> fused(s.numel()), ref(s.numel());
    std::mt19937_64 rng(seed);
    inception_train(img, s, rng, fused.data());
    // TF-slim's inception_preprocessing.preprocess_for_train, fast_mode.
    std::mt19937_64 r2(seed);
    FloatImage f = to_float(img, 1.0f / 255.0f);
    const Window box = sample_distorted_box(f.height, f.width, r2);
    f = resize_bilinear(crop(f, box.top, box.left, box.height, box.width), s.height, s.width);
    if (std::uniform_int_distribution<int>(0, 1)(r2) == 1) flip_left_right(f);
    adjust_brightness(f, uniform(r2, -32.0f / 255.0f, 32.0f / 255.0f));
    adjust_saturation(f, uniform(r2, 0.5f, 1.5f));
    clip(f, 0.0f, 1.0f);
    affine(f, -0.5f, 2.0f);
    write_chw(f, ref.data());
    EXPECT_LT(compare(fused, ref).max, 1e-5) << "seed " << seed;
  }
}

TEST(FastDecode, SaturationClosedFormMatchesHsvRoundTrip) {
  // rgb -> hsv -> scale s -> rgb, written out for a few pixels.
  const float px[][3] = {{0.9f, 0.2f, 0.4f},
                         {0.1f, 0.5f, 0.3f},
                         {0.3f, 0.3f, 0.3f},
                         {-0.1f, -0.2f, -0.3f},
                         {1.1f, -0.05f, 0.5f}};
  for (const auto& p : px) {
    for (float factor : {0.5f, 1.3f, 3.0f}) {
      float q[3] = {p[0], p[1], p[2]};
      saturate_pixel(q, factor);
      const float v = std::max({p[0], p[1], p[2]});
      const float mn = std::min({p[0], p[1], p[2]});
      float s = v > 0 ? (v - mn) / v : 0.0f;
      const float s2 = std::clamp(s * factor, 0.0f, 1.0f);
      for (int c = 0; c < 3; ++c) {
        // Each channel is v * (1 - s * k_c), k_c fixed by the hue.
        const float k = (v > 0 && v > mn) ? (v - p[c]) / (v * s) : 0.0f;
        EXPECT_NEAR(q[c], v * (1 - s2 * k), 1e-6);
      }
    }
  }
}

TEST(FastDecode, SaturationTurnsGrayWhereTensorFlowsHueWrapsToOne) {
  // A pixel TensorFlow 2.12's tf.image.adjust_saturation(x, 1.38250721)
  // maps to (0.08965266, 0.08965266, 0.08965266) (the TF oracle, after a
  // resize and brightness): red the largest, blue one float above green, so
  // the hue -1.4e-8 + 1 rounds to 1.0 and the kernel's HSV -> RGB switch
  // leaves every channel at m = v - s'v.
  const uint32_t bits[3] = {1060943264u, 1049206788u, 1049206790u};
  float px[3];
  std::memcpy(px, bits, sizeof px);
  saturate_pixel(px, 1.38250721f);
  for (float c : px) EXPECT_NEAR(c, 0.08965266f, 1e-7);
  // Green and blue swapped (blue one float below green): an ordinary pixel.
  const uint32_t swapped[3] = {bits[0], bits[2], bits[1]};
  std::memcpy(px, swapped, sizeof px);
  saturate_pixel(px, 1.38250721f);
  EXPECT_GT(px[0], 0.7f);
  EXPECT_LT(px[1], 0.1f);
}

// fast_jpeg_decode=True vs False on the same bytes and seed: same crop, so
// the only difference is DCT-domain downscaling (an 8-tap box-like IDCT
// filter) instead of bilinear sampling of the full-size image.
TEST(FastDecode, DctScaledCropIsCloseToFullDecode) {
  // 112 x 112 from 500 x 375: crops of at least 224 (or 448) pixels a side
  // decode at 1/2 (or 1/4) scale, smaller ones at full scale (ROI only).
  const std::string jpeg = io::encode_jpeg(photo(375, 500, 2), 90);
  const OutputShape s{3, 112, 112};
  double mean_sum = 0, worst_mean = 0;
  const int n = 40;
  for (int seed = 0; seed < n; ++seed) {
    std::vector<float> fast(s.numel()), full(s.numel());
    std::mt19937_64 r1(seed), r2(seed);
    inception_train(EncodedImage{jpeg, 3}, s, true, r1, fast.data());
    inception_train(EncodedImage{jpeg, 3}, s, false, r2, full.data());
    const Diff d = compare(fast, full);
    mean_sum += d.mean;
    worst_mean = std::max(worst_mean, d.mean);
  }
  // Output units: [-1, 1], one 8-bit level = 2/255 = 0.0078.
  std::printf("fast vs full: mean |diff| %.4f, worst image %.4f\n", mean_sum / n, worst_mean);
  EXPECT_LT(mean_sum / n, 0.02);
  EXPECT_LT(worst_mean, 0.04);

  std::vector<float> fast(s.numel()), full(s.numel());
  inception_eval(EncodedImage{jpeg, 3}, s, true, fast.data());
  inception_eval(EncodedImage{jpeg, 3}, s, false, full.data());
  const Diff d = compare(fast, full);
  std::printf("eval fast vs full: mean |diff| %.4f\n", d.mean);
  EXPECT_LT(d.mean, 0.03);
}

TEST(FastDecode, FullDecodePathEqualsDecodedImagePath) {
  // fast_jpeg_decode=False is exactly "decode, then TF-slim on the pixels".
  const std::string jpeg = io::encode_jpeg(photo(120, 90, 3), 90);
  const OutputShape s{3, 64, 64};
  std::vector<float> a(s.numel()), b(s.numel());
  std::mt19937_64 r1(7), r2(7);
  inception_train(EncodedImage{jpeg, 3}, s, false, r1, a.data());
  inception_train(io::decode_image(jpeg, 3), s, r2, b.data());
  EXPECT_EQ(a, b);
}

TEST(FastDecode, FormatComesFromTheBytesNotTheRecord) {
  // A record that says "png" but holds JPEG (and the reverse) decodes.
  io::ImageRecord rec;
  rec.encoded = io::encode_jpeg(photo(40, 40, 4), 90);
  rec.format = "png";
  rec.label = 1;
  const io::ImageRecord back = io::decode_image_example(io::encode_image_example(rec));
  const OutputShape s{3, 32, 32};
  std::vector<float> out(s.numel());
  std::mt19937_64 rng(1);
  for (const char* name : {"inception", "vgg", "cifarnet", "lenet"}) {
    auto fn = get_preprocessing(name, s, true);
    EXPECT_NO_THROW(fn({back.encoded, 3}, rng, out.data())) << name;
  }
  rec.encoded = io::encode_png(photo(40, 40, 5));
  rec.format = "jpeg";
  const io::ImageRecord png = io::decode_image_example(io::encode_image_example(rec));
  EXPECT_NO_THROW(get_preprocessing("cifarnet", s, true)({png.encoded, 3}, rng, out.data()));
}

TEST(FastDecode, ChannelsAsTheModelNeeds) {
  const std::string rgb_jpeg = io::encode_jpeg(photo(50, 60, 6), 90);
  std::mt19937_64 rng(3);
  const OutputShape gray{1, 32, 32};
  std::vector<float> out(gray.numel());
  for (bool fast : {true, false}) {
    inception_train(EncodedImage{rgb_jpeg, 1}, gray, fast, rng, out.data());
    for (float v : out) ASSERT_TRUE(v >= -1.0f && v <= 1.0f);
  }
  // Stored channels (0) that disagree with the model: a DataError.
  EXPECT_THROW(inception_train(EncodedImage{rgb_jpeg, 0}, gray, true, rng, out.data()), DataError);
  EXPECT_THROW(inception_train(EncodedImage{"not an image", 3}, {3, 32, 32}, true, rng, out.data()),
               DataError);
}

}  // namespace
}  // namespace fastnn::preprocessing
