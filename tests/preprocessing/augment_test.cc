// The augmentation policies where the training preprocessing runs them, and
// random erasing. Pixel parity of each op with torchvision is
// torchvision_parity.py's (torchvision_parity_test).
#include "preprocessing/augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fastnn/errors.h"
#include "preprocessing/lenet_preprocessing.h"
#include "preprocessing/preprocessing_factory.h"
#include "preprocessing/slim_preprocessing.h"

namespace fastnn::preprocessing {
namespace {

io::Image noise(int h, int w, int channels, uint64_t seed) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = channels;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < h * w * channels; ++i)
    img.pixels.push_back(static_cast<uint8_t>(rng() % 256));
  return img;
}

std::vector<float> run(const PreprocessFn& fn, const std::string& bytes, int channels,
                       const OutputShape& s, uint64_t seed) {
  std::vector<float> out(s.numel());
  std::mt19937_64 rng(seed);
  fn({bytes, channels}, rng, out.data());
  return out;
}

TEST(Augment, OpsFollowTheirFormulas) {
  ByteImage img{1, 2, 4, {10, 20, 30, 40, 50, 60, 70, 80}};
  ByteImage t = img;
  apply_augment_op(t, AugmentOp::kTranslateX, 1.9);  // int(1.9) = 1 to the right
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0, 10, 20, 30, 0, 50, 60, 70}));
  t = img;
  apply_augment_op(t, AugmentOp::kPosterize, 4);  // keep the top 4 bits
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0, 16, 16, 32, 48, 48, 64, 80}));
  t = img;
  apply_augment_op(t, AugmentOp::kSolarize, 45.0);  // >= 45 inverted
  EXPECT_EQ(t.data, (std::vector<uint8_t>{10, 20, 30, 40, 205, 195, 185, 175}));
  t = img;
  apply_augment_op(t, AugmentOp::kAutoContrast, 0.0);  // (x - 10) * 255 / 70
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0, 36, 72, 109, 145, 182, 218, 255}));
  t = img;
  apply_augment_op(t, AugmentOp::kBrightness, -0.5);  // x * 0.5, truncated
  EXPECT_EQ(t.data, (std::vector<uint8_t>{5, 10, 15, 20, 25, 30, 35, 40}));
}

TEST(Augment, SpacesHaveTorchvisionsSizes) {
  EXPECT_EQ(augmentation_space("randaugment", 31, 224, 224).size(), 14u);
  EXPECT_EQ(augmentation_space("trivialaugment", 31, 224, 224).size(), 14u);
  const auto aa = augmentation_space("autoaugment_imagenet", 10, 224, 224);
  EXPECT_EQ(aa.size(), 14u);
  EXPECT_EQ(aa.back().op, AugmentOp::kInvert);
  EXPECT_EQ(autoaugment_imagenet_policy().size(), 25u);
  // RandAugment's TranslateX tops out at 150/331 of the width.
  const auto ra = augmentation_space("randaugment", 31, 100, 331);
  EXPECT_NEAR(ra[3].magnitudes.back(), 150.0, 1e-4);
  EXPECT_NEAR(ra[4].magnitudes.back(), 150.0 / 331.0 * 100, 1e-4);
}

TEST(Augment, BadValuesAreConfigErrors) {
  AugmentOptions o;
  o.policy = "autoaugment_cifar";
  EXPECT_THROW(make_augment(o), ConfigError);
  o.policy = "randaugment";
  o.randaugment_magnitude = 31;
  EXPECT_THROW(make_augment(o), ConfigError);
  o.randaugment_magnitude = 9;
  o.randaugment_num_ops = -1;
  EXPECT_THROW(make_augment(o), ConfigError);
  o.randaugment_num_ops = 2;
  o.random_erasing_prob = 1.5;
  EXPECT_THROW(make_augment(o), ConfigError);
  PreprocessOptions po;
  po.augment.policy = "bogus";
  EXPECT_THROW(get_preprocessing("vgg", {3, 32, 32}, true, po), ConfigError);
}

// vgg: the policy sees the cropped, flipped pixels before the means are
// subtracted (an inverting policy gives 255 - round(x) - mean).
TEST(Augment, VggPolicyRunsAfterCropAndFlipBeforeTheMeans) {
  const io::Image img = noise(300, 280, 3, 1);
  const OutputShape s{3, 32, 32};
  std::vector<float> plain(s.numel()), inverted(s.numel());
  std::mt19937_64 a(7), b(7);
  vgg_train(img, s, a, plain.data());
  AugmentFn invert = [](ByteImage& x, std::mt19937_64&) {
    apply_augment_op(x, AugmentOp::kInvert, 0.0);
  };
  vgg_train(img, s, b, inverted.data(), invert);
  const float means[3] = {123.68f, 116.78f, 103.94f};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 32 * 32; ++i) {
      const size_t k = size_t(c) * 32 * 32 + i;
      const float x = std::nearbyint(plain[k] + means[c]);
      ASSERT_NEAR(inverted[k] + means[c], 255.0f - x, 1e-3) << k;
    }
  }
  EXPECT_EQ(a(), b());  // the policy drew nothing here: same generator state
}

// inception: the policy runs before the colour distortion, on both decode
// paths: a policy that paints the image gray leaves one value everywhere.
TEST(Augment, InceptionPolicyRunsBeforeTheColourOnEveryDecodePath) {
  const std::string jpeg = io::encode_jpeg(noise(120, 100, 3, 2));
  const OutputShape s{3, 48, 48};
  AugmentFn gray = [](ByteImage& x, std::mt19937_64&) {
    std::fill(x.data.begin(), x.data.end(), uint8_t{128});
  };
  for (bool fast : {true, false}) {
    std::vector<float> out(s.numel());
    std::mt19937_64 rng(3);
    inception_train(EncodedImage{jpeg, 3}, s, fast, rng, out.data(), gray);
    for (float v : out) ASSERT_FLOAT_EQ(v, out[0]) << "fast=" << fast;
    EXPECT_NE(out[0], (128.0f / 255.0f - 0.5f) * 2.0f);  // brightness moved it
  }
}

TEST(Augment, PoliciesAreSeededAndChangeTheInput) {
  const std::string png = io::encode_png(noise(64, 56, 3, 4));
  const OutputShape s{3, 32, 32};
  for (const char* name : {"inception", "vgg", "cifarnet", "lenet"}) {
    const auto none = get_preprocessing(name, s, true);
    for (const char* policy : {"autoaugment_imagenet", "randaugment", "trivialaugment"}) {
      PreprocessOptions o;
      o.augment.policy = policy;
      const auto fn = get_preprocessing(name, s, true, o);
      int changed = 0;
      for (uint64_t seed = 0; seed < 8; ++seed) {
        const auto first = run(fn, png, 3, s, seed);
        ASSERT_EQ(first, run(fn, png, 3, s, seed)) << name << " " << policy;
        if (first != run(none, png, 3, s, seed)) ++changed;
      }
      EXPECT_GE(changed, 4) << name << " " << policy;
      // Evaluation never augments.
      EXPECT_EQ(run(get_preprocessing(name, s, false, o), png, 3, s, 0),
                run(get_preprocessing(name, s, false), png, 3, s, 0));
    }
  }
}

// cifarnet's crop of whole pixel values rounds exactly: RandAugment with no
// ops is TF-slim's cifarnet bit for bit, same draws.
TEST(Augment, RandAugmentWithoutOpsKeepsCifarnetsNumbers) {
  const std::string png = io::encode_png(noise(32, 32, 3, 5));
  const OutputShape s{3, 32, 32};
  PreprocessOptions o;
  o.augment.policy = "randaugment";
  o.augment.randaugment_num_ops = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    EXPECT_EQ(run(get_preprocessing("cifarnet", s, true, o), png, 3, s, seed),
              run(get_preprocessing("cifarnet", s, true), png, 3, s, seed));
  }
}

TEST(Augment, RandomErasingZeroesOneRectangle) {
  const OutputShape s{3, 40, 50};
  int erased = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<float> x(s.numel(), 1.0f);
    std::mt19937_64 rng(seed);
    random_erase(x.data(), s, 0.5, rng);
    int top = s.height, left = s.width, bottom = -1, right = -1, zeros = 0;
    for (int y = 0; y < s.height; ++y) {
      for (int c = 0; c < s.width; ++c) {
        if (x[y * s.width + c] != 0.0f) continue;
        ++zeros;
        top = std::min(top, y);
        bottom = std::max(bottom, y);
        left = std::min(left, c);
        right = std::max(right, c);
      }
    }
    if (zeros == 0) continue;
    ++erased;
    const int h = bottom - top + 1, w = right - left + 1;
    ASSERT_EQ(zeros, h * w) << "not one rectangle, seed " << seed;
    for (int c = 1; c < 3; ++c) {  // every channel, the same rectangle
      for (int i = 0; i < s.height * s.width; ++i) {
        ASSERT_EQ(x[c * s.height * s.width + i] == 0.0f, x[i] == 0.0f);
      }
    }
    // Area (0.02, 0.33) and ratio (0.3, 3.3), up to the rounding of h, w.
    const double area = double(h) * w / (s.height * s.width);
    EXPECT_GT(area, 0.01);
    EXPECT_LT(area, 0.36);
    EXPECT_LT(h, s.height);
    EXPECT_LT(w, s.width);
  }
  EXPECT_GT(erased, 70);  // p = 0.5 of 200 (and a few of 10 tries fail)
  EXPECT_LT(erased, 130);
}

TEST(Augment, RandomErasingOnlyInTraining) {
  const std::string png = io::encode_png(noise(28, 28, 1, 6));
  const OutputShape s{1, 28, 28};
  PreprocessOptions o;
  o.augment.random_erasing_prob = 1.0;
  const auto count_zeros = [](const std::vector<float>& v) {
    return std::count(v.begin(), v.end(), 0.0f);
  };
  // lenet maps x to (x - 128) / 128: erasing adds zeros.
  const auto plain = run(get_preprocessing("lenet", s, true), png, 1, s, 1);
  EXPECT_GT(count_zeros(run(get_preprocessing("lenet", s, true, o), png, 1, s, 1)),
            count_zeros(plain) + 10);
  EXPECT_EQ(run(get_preprocessing("lenet", s, false, o), png, 1, s, 1),
            run(get_preprocessing("lenet", s, false), png, 1, s, 1));
}

}  // namespace
}  // namespace fastnn::preprocessing
