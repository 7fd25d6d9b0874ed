// Mixup and cutmix (timm's Mixup, batch mode) on fixed lambdas and boxes
// against the formulas, their draws, and the step with them.
#include "src/train/mixup.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "src/train/loss.h"
#include "tests/train/step_rig.h"

namespace fastnn::train {
namespace {

torch::Tensor batch_images() {
  return torch::arange(4 * 2 * 5 * 6, torch::kFloat32).reshape({4, 2, 5, 6});
}

TEST(Mixup, MixupIsLambdaTimesTheBatchPlusTheRestOfItsFlip) {
  const auto x = batch_images();
  MixParams p;
  p.lambda = 0.3;
  const auto y = mix_images(x, p);
  for (int64_t n = 0; n < 4; ++n) {
    const auto want = x[n] * 0.3 + x[3 - n] * 0.7;
    EXPECT_TRUE(torch::allclose(y[n], want, 0, 1e-5)) << n;
  }
  EXPECT_TRUE(torch::equal(x, batch_images()));  // the input is left alone
}

TEST(Mixup, CutmixCopiesTheBoxFromTheFlip) {
  const auto x = batch_images();
  MixParams p;
  p.cutmix = true;
  p.lambda = 1.0 - 2.0 * 3.0 / 30.0;
  p.y0 = 1, p.y1 = 3, p.x0 = 2, p.x1 = 5;
  const auto y = mix_images(x, p);
  for (int64_t n = 0; n < 4; ++n) {
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t i = 0; i < 5; ++i) {
        for (int64_t j = 0; j < 6; ++j) {
          const bool in_box = i >= 1 && i < 3 && j >= 2 && j < 5;
          EXPECT_EQ(y[n][c][i][j].item<float>(), x[in_box ? 3 - n : n][c][i][j].item<float>());
        }
      }
    }
  }
}

// timm's mixup_target and SoftTargetCrossEntropy, written out: targets
// lambda * onehot(y) + (1 - lambda) * onehot(y.flip(0)) with on/off values
// 1 - s + s/K and s/K, loss mean(-sum(target * log_softmax)).
TEST(Mixup, LossIsSoftTargetCrossEntropyOfTimmsTargets) {
  torch::manual_seed(1);
  const int64_t k = 7;
  const auto logits = torch::randn({5, k});
  const auto labels = torch::tensor({3, 0, 6, 3, 1}, torch::kLong);
  for (double smoothing : {0.0, 0.1}) {
    for (double lambda : {1.0, 0.62, 0.3}) {
      MixParams p;
      p.lambda = lambda;
      const double off = smoothing / k, on = 1.0 - smoothing + off;
      auto onehot = [&](const torch::Tensor& y) {
        return torch::full({5, k}, off).scatter_(1, y.view({-1, 1}), on);
      };
      const auto target = onehot(labels) * lambda + onehot(labels.flip(0)) * (1.0 - lambda);
      const double want = (-(target * torch::log_softmax(logits, 1)).sum(1)).mean().item<double>();
      EXPECT_NEAR(mixed_classification_loss(logits, labels, p, smoothing).item<double>(), want,
                  1e-6)
          << "smoothing " << smoothing << " lambda " << lambda;
    }
  }
  MixParams p;
  p.lambda = 0.5;  // a tie keeps the batch's own labels
  EXPECT_TRUE(torch::equal(dominant_labels(labels, p), labels));
  p.lambda = 0.49;
  EXPECT_TRUE(torch::equal(dominant_labels(labels, p), labels.flip(0)));
}

TEST(Mixup, DrawsFollowTimm) {
  MixupOptions o;
  EXPECT_FALSE(draw_mix(o, 0, 28, 28).mixes());  // both alphas 0: off
  o.cutmix_alpha = 1.0;
  double sum = 0;
  for (int64_t b = 0; b < 2000; ++b) {
    const MixParams p = draw_mix(o, b, 28, 32);
    ASSERT_TRUE(p.cutmix);
    ASSERT_GE(p.y0, 0);
    ASSERT_LE(p.y1, 28);
    ASSERT_GE(p.x0, 0);
    ASSERT_LE(p.x1, 32);
    // correct_lam: lambda is the share the box leaves.
    ASSERT_DOUBLE_EQ(p.lambda, 1.0 - double((p.y1 - p.y0) * (p.x1 - p.x0)) / (28 * 32));
    sum += p.lambda;
  }
  // Beta(1, 1) is uniform; the clipped box makes lambda larger on average.
  EXPECT_GT(sum / 2000, 0.5);
  EXPECT_LT(sum / 2000, 0.75);
  o.mixup_alpha = 1.0;
  o.switch_prob = 0.0;
  sum = 0;
  for (int64_t b = 0; b < 2000; ++b) {
    const MixParams p = draw_mix(o, b, 28, 32);
    ASSERT_FALSE(p.cutmix);
    sum += p.lambda;
  }
  EXPECT_NEAR(sum / 2000, 0.5, 0.03);  // Beta(1, 1): mean 1/2, sd 0.29/sqrt(2000)
  o.switch_prob = 1.0;
  EXPECT_TRUE(draw_mix(o, 5, 28, 28).cutmix);
  o.prob = 0.0;
  EXPECT_FALSE(draw_mix(o, 5, 28, 28).mixes());
  // Seeded by (seed, rank, batch number): the same batch draws the same.
  o.prob = 1.0;
  o.switch_prob = 0.5;
  const MixParams a = draw_mix(o, 9, 28, 28), b = draw_mix(o, 9, 28, 28);
  EXPECT_EQ(a.lambda, b.lambda);
  EXPECT_EQ(a.y0, b.y0);
  o.rank = 1;
  EXPECT_NE(draw_mix(o, 9, 28, 28).lambda, a.lambda);
}

// Beta(e, e) for a tiny e puts lambda next to 0 or 1, about as often each
// (not half and half, as when both Gamma draws underflow).
TEST(Mixup, ATinyAlphaMixesNextToNothingNotHalfAndHalf) {
  MixupOptions o;
  o.mixup_alpha = 1e-30;
  int near_one = 0;
  for (int64_t b = 0; b < 400; ++b) {
    const double lambda = draw_mix(o, b, 28, 28).lambda;
    ASSERT_TRUE(lambda < 1e-6 || lambda > 1 - 1e-6) << "batch " << b << ": " << lambda;
    near_one += lambda > 0.5;
  }
  EXPECT_GT(near_one, 120);  // binomial(400, 1/2): 200, sd 10
  EXPECT_LT(near_one, 280);
}

// Mixup on: no host read on the steps that do not read (the GPU's way),
// and with mixup_prob 0 the same weights as without mixup.
TEST(Mixup, StepMixesWithoutReadingTheDevice) {
  testing::StepRigOptions o;
  o.read_every_step = false;
  o.mixup.mixup_alpha = 0.4;
  o.mixup.cutmix_alpha = 1.0;
  testing::StepRig mixed(std::move(o));
  for (int i = 0; i < 4; ++i) {
    const int64_t before = host_reads();
    mixed.run(i, false);
    EXPECT_EQ(host_reads(), before) << "step " << i;
  }
  testing::StepRigOptions never;
  never.mixup.mixup_alpha = 1.0;
  never.mixup.prob = 0.0;
  testing::StepRig plain(testing::StepRigOptions{}), unmixed(std::move(never));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(plain.run(i, true).loss, unmixed.run(i, true).loss);
  }
  testing::StepRigOptions on;
  on.mixup.mixup_alpha = 1.0;
  testing::StepRig mixing(std::move(on)), reference(testing::StepRigOptions{});
  EXPECT_NE(mixing.run(0, true).loss, reference.run(0, true).loss);
}

}  // namespace
}  // namespace fastnn::train
