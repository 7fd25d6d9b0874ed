// TF-slim's inception / vgg / cifarnet preprocessing and the TF image ops
// under them: exact values where TF's formula gives them, and the
// documented statistics of each random transform.
#include "preprocessing/slim_preprocessing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "fastnn/errors.h"

namespace fastnn::preprocessing {
namespace {

io::Image rgb(int h, int w, uint8_t r, uint8_t g, uint8_t b) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = 3;
  for (int i = 0; i < h * w; ++i) {
    img.pixels.push_back(r);
    img.pixels.push_back(g);
    img.pixels.push_back(b);
  }
  return img;
}

io::Image noise(int h, int w, uint64_t seed) {
  io::Image img = rgb(h, w, 0, 0, 0);
  std::mt19937_64 rng(seed);
  for (auto& p : img.pixels) p = static_cast<uint8_t>(rng() % 256);
  return img;
}

TEST(ImageOps, ResizeBilinearIsTF1AlignCornersFalse) {
  FloatImage in{1, 2, 1, {10.0f, 20.0f}};
  auto out = resize_bilinear(in, 1, 4);
  // Source x = dst * 0.5: 0, 0.5, 1, 1.5 (clamped to the last pixel).
  EXPECT_FLOAT_EQ(out.data[0], 10.0f);
  EXPECT_FLOAT_EQ(out.data[1], 15.0f);
  EXPECT_FLOAT_EQ(out.data[2], 20.0f);
  EXPECT_FLOAT_EQ(out.data[3], 20.0f);
}

TEST(ImageOps, CentralCropUsesTFOffsets) {
  FloatImage in{100, 100, 1, std::vector<float>(10000, 1.0f)};
  auto out = central_crop(in, 0.875);
  EXPECT_EQ(out.height, 88);  // offset int((100 - 87.5) / 2) = 6 each side
  EXPECT_EQ(out.width, 88);
}

TEST(ImageOps, SaturationAndContrastEndpoints) {
  FloatImage img{1, 1, 3, {0.8f, 0.4f, 0.2f}};
  auto same = img;
  adjust_saturation(same, 1.0f);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(same.data[c], img.data[c], 1e-6);
  auto gray = img;
  adjust_saturation(gray, 0.0f);  // S = 0: every channel becomes V
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(gray.data[c], 0.8f, 1e-6);
  FloatImage two{1, 2, 1, {0.0f, 1.0f}};
  adjust_contrast(two, 0.0f);
  EXPECT_FLOAT_EQ(two.data[0], 0.5f);
  EXPECT_FLOAT_EQ(two.data[1], 0.5f);
}

TEST(ImageOps, PerImageStandardization) {
  FloatImage img{2, 2, 1, {1, 2, 3, 4}};
  per_image_standardization(img);
  const float mean = std::accumulate(img.data.begin(), img.data.end(), 0.0f) / 4;
  EXPECT_NEAR(mean, 0.0f, 1e-6);
  float sq = 0;
  for (float v : img.data) sq += v * v;
  EXPECT_NEAR(sq / 4, 1.0f, 1e-5);
  FloatImage flat{2, 2, 1, {5, 5, 5, 5}};  // std 0 -> divided by 1/sqrt(N)
  per_image_standardization(flat);
  for (float v : flat.data) EXPECT_FLOAT_EQ(v, 0.0f);
}

TEST(ImageOps, DistortedBoxStatistics) {
  std::mt19937_64 rng(3);
  double area_sum = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    Window w = sample_distorted_box(300, 400, rng);
    ASSERT_GE(w.top, 0);
    ASSERT_LE(w.top + w.height, 300);
    ASSERT_LE(w.left + w.width, 400);
    const double frac = double(w.height) * w.width / (300.0 * 400.0);
    ASSERT_GE(frac, 0.1 - 1e-9);  // min_object_covered of the whole image
    ASSERT_LE(frac, 1.0);
    const double aspect = double(w.width) / w.height;
    if (frac < 1.0) {
      ASSERT_GE(aspect, 0.75 - 0.05);
      ASSERT_LE(aspect, 1.33 + 0.05);
    }
    area_sum += frac;
  }
  // Uniform area in [0.05, 1] with draws under 0.1 (or not fitting)
  // rejected: the mean lies well inside (0.3, 0.7).
  EXPECT_GT(area_sum / n, 0.3);
  EXPECT_LT(area_sum / n, 0.7);
}

TEST(InceptionPreprocessing, EvalRangeShapeAndConstantImage) {
  OutputShape s{3, 299, 299};
  std::vector<float> out(s.numel());
  inception_eval(rgb(375, 500, 255, 0, 51), s, out.data());
  const size_t plane = 299 * 299;
  EXPECT_FLOAT_EQ(out[0], 1.0f);       // R = 255 -> 1
  EXPECT_FLOAT_EQ(out[plane], -1.0f);  // G = 0 -> -1
  EXPECT_NEAR(out[2 * plane], 51 / 255.0 * 2 - 1, 1e-6);
}

TEST(InceptionPreprocessing, TrainStaysInRangeAndFlipsAboutHalf) {
  OutputShape s{3, 64, 64};
  std::vector<float> out(s.numel());
  // Left half black, right half white: after a flip the left column is
  // white; count how often.
  io::Image img = rgb(80, 80, 0, 0, 0);
  for (int y = 0; y < 80; ++y) {
    for (int x = 40; x < 80; ++x) {
      for (int c = 0; c < 3; ++c) img.pixels[(y * 80 + x) * 3 + c] = 255;
    }
  }
  int flipped = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    std::mt19937_64 rng(i);
    inception_train(img, s, rng, out.data());
    for (float v : out) ASSERT_TRUE(v >= -1.0f && v <= 1.0f);
    if (out[32 * 64 + 0] > out[32 * 64 + 63]) ++flipped;
  }
  EXPECT_GT(flipped, n * 0.35);
  EXPECT_LT(flipped, n * 0.65);
}

TEST(VggPreprocessing, EvalSubtractsMeansAndTrainResizesSmallestSide) {
  OutputShape s{3, 224, 224};
  std::vector<float> out(s.numel());
  vgg_eval(rgb(300, 400, 200, 100, 50), s, out.data());
  const size_t plane = 224 * 224;
  EXPECT_NEAR(out[0], 200 - 123.68, 1e-4);
  EXPECT_NEAR(out[plane + 5], 100 - 116.78, 1e-4);
  EXPECT_NEAR(out[2 * plane + 9], 50 - 103.94, 1e-4);
  FloatImage img{300, 400, 1, std::vector<float>(120000, 0.0f)};
  auto r = aspect_preserving_resize(img, 256);
  EXPECT_EQ(r.height, 256);
  EXPECT_EQ(r.width, 341);  // round(400 * 256 / 300)
  std::mt19937_64 rng(1);
  vgg_train(noise(300, 400, 2), s, rng, out.data());
  for (float v : out) ASSERT_TRUE(v >= -124.0f && v <= 256.0f);
}

TEST(VggPreprocessing, SmallestSideSizeRoundsAsTensorFlow) {
  // TF-slim's _smallest_size_at_least: float32 scale, rint (half to even).
  // 641 * 256/512 = 320.5 -> 320 (std::lround gave 321, so every pixel of
  // the crop was resampled from another position).
  const Window size = smallest_side_size(512, 641, 256);
  EXPECT_EQ(size.height, 256);
  EXPECT_EQ(size.width, 320);
  EXPECT_EQ(
      aspect_preserving_resize(FloatImage{512, 641, 1, std::vector<float>(512 * 641)}, 256).width,
      320);
  // 22 * 300/16 = 412.5 -> 412; 375 x 500 to 256 is 341.33 -> 341.
  EXPECT_EQ(smallest_side_size(16, 22, 300).width, 412);
  EXPECT_EQ(smallest_side_size(375, 500, 256).width, 341);
}

TEST(CifarnetPreprocessing, OutputsAreStandardized) {
  OutputShape s{3, 32, 32};
  std::vector<float> out(s.numel());
  for (int i = 0; i < 20; ++i) {
    std::mt19937_64 rng(i);
    cifarnet_train(noise(32, 32, i), s, rng, out.data());
    double sum = 0, sq = 0;
    for (float v : out) {
      sum += v;
      sq += v * v;
    }
    EXPECT_NEAR(sum / out.size(), 0.0, 1e-4);
    EXPECT_NEAR(sq / out.size(), 1.0, 1e-3);
  }
  cifarnet_eval(noise(36, 30, 1), s, out.data());  // crop rows, pad columns
  double sum = 0;
  for (float v : out) sum += v;
  EXPECT_NEAR(sum / out.size(), 0.0, 1e-4);
}

TEST(SlimPreprocessing, ChannelMismatchIsADataError) {
  io::Image gray;
  gray.height = gray.width = 32;
  gray.channels = 1;
  gray.pixels.assign(32 * 32, 0);
  std::vector<float> out(3 * 32 * 32);
  EXPECT_THROW(cifarnet_eval(gray, {3, 32, 32}, out.data()), DataError);
}

TEST(PreprocessingFactory, AllFourNames) {
  EXPECT_EQ(preprocessing_names(),
            (std::vector<std::string>{"inception", "vgg", "cifarnet", "lenet"}));
  for (const auto& n : preprocessing_names()) {
    EXPECT_TRUE(get_preprocessing(n, {3, 32, 32}, true) != nullptr);
    EXPECT_TRUE(get_preprocessing(n, {3, 32, 32}, false) != nullptr);
  }
}

}  // namespace
}  // namespace fastnn::preprocessing
