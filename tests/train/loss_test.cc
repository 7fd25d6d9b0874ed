// Loss pieces against hand-derived values.
#include "src/train/loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "src/train/builder.h"
#include "src/train/loss_scale.h"

namespace fastnn::train {
namespace {

TEST(Loss, CrossEntropyWithAndWithoutSmoothing) {
  // Two classes, logits (0, ln 3): p = (1/4, 3/4).
  auto logits = torch::tensor({{0.0, std::log(3.0)}}, torch::kFloat64);
  auto label = torch::tensor({1}, torch::kInt64);
  EXPECT_NEAR(classification_loss(logits, label, 0).item<double>(), -std::log(0.75), 1e-12);
  // ls = 0.2: targets (0.1, 0.9) -> -(0.1 ln 1/4 + 0.9 ln 3/4).
  EXPECT_NEAR(classification_loss(logits, label, 0.2).item<double>(),
              -(0.1 * std::log(0.25) + 0.9 * std::log(0.75)), 1e-12);
}

TEST(Loss, L2ValueAndGradientMatchTheLossTerm) {
  auto a = torch::tensor({1.0, 2.0}, torch::kFloat64).requires_grad_();
  auto b = torch::tensor({{3.0}}, torch::kFloat64).requires_grad_();
  auto frozen = torch::tensor({4.0}, torch::kFloat64);  // not trainable
  a.mutable_grad() = torch::tensor({0.5, 0.5}, torch::kFloat64);
  // decay * sum(w^2) / 2 over all three, trainable or not.
  EXPECT_NEAR(apply_l2_regularization({a, b, frozen}, 0.1), 0.1 * 30 / 2, 1e-12);
  // d/dw = decay * w, added to an existing gradient or as a new one.
  EXPECT_TRUE(torch::allclose(a.grad(), torch::tensor({0.6, 0.7}, torch::kFloat64)));
  EXPECT_TRUE(torch::allclose(b.grad(), torch::tensor({{0.3}}, torch::kFloat64)));
  EXPECT_FALSE(frozen.grad().defined());
}

TEST(Loss, ClipByGlobalNorm) {
  auto a = torch::zeros({2}, torch::kFloat64).requires_grad_();
  auto b = torch::zeros({1}, torch::kFloat64).requires_grad_();
  a.mutable_grad() = torch::tensor({3.0, 0.0}, torch::kFloat64);
  b.mutable_grad() = torch::tensor({4.0}, torch::kFloat64);
  std::vector<optim::Variable> vars = {{"a", a}, {"b", b}};
  EXPECT_DOUBLE_EQ(clip_by_global_norm(vars, 10.0), 5.0);  // below: unchanged
  EXPECT_DOUBLE_EQ(b.grad().item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(clip_by_global_norm(vars, 1.0), 5.0);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-12);
  EXPECT_NEAR(b.grad().item<double>(), 0.8, 1e-12);
}

TEST(Loss, MovingAverageDecayWarmsUpLikeTF) {
  EXPECT_DOUBLE_EQ(moving_average_decay_at(0.999, 0), 0.1);
  EXPECT_DOUBLE_EQ(moving_average_decay_at(0.999, 90), 91.0 / 100.0);
  EXPECT_DOUBLE_EQ(moving_average_decay_at(0.999, 100000), 0.999);
}

TEST(Loss, TrainableScopesMatchPrefixes) {
  EXPECT_TRUE(in_scopes("LeNet/fc4/weights", ""));
  EXPECT_TRUE(in_scopes("LeNet/fc4/weights", "LeNet/fc3, LeNet/fc4"));
  EXPECT_FALSE(in_scopes("LeNet/conv1/weights", "LeNet/fc3,LeNet/fc4"));
}

}  // namespace
}  // namespace fastnn::train

namespace fastnn::train {
namespace {

TEST(LossScaler, DynamicBacksOffOnOverflowAndGrowsAfterTheInterval) {
  LossScaleOptions o;
  o.dynamic = true;
  o.initial_scale = 1024;
  o.growth_interval = 3;
  LossScaler s(o);
  EXPECT_FALSE(s.update(false));  // skipped, halved
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.good_steps(), 2);
  EXPECT_TRUE(s.update(true));  // third finite step in a row: doubled
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));  // an overflow resets the run of good steps
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, NeverFallsBelowTheMinimum) {
  LossScaleOptions o;
  o.dynamic = true;
  o.initial_scale = 4;
  LossScaler s(o);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScaler, StaticKeepsItsScaleAndLetsTheCallerJudge) {
  LossScaleOptions o;
  o.initial_scale = 128;
  LossScaler s(o);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 128);
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(LossScaler, PolicyFromHyperparameters) {
  HParams hp;
  EXPECT_FALSE(loss_scale_options(hp, /*fp16_autocast=*/false).dynamic);
  EXPECT_TRUE(loss_scale_options(hp, /*fp16_autocast=*/true).dynamic);
  EXPECT_EQ(loss_scale_options(hp, true).initial_scale, 32768.0);  // TF's 2^15
  hp.loss_scaling = "static";
  EXPECT_FALSE(loss_scale_options(hp, true).dynamic);
  hp.loss_scaling = "dynamic";
  hp.loss_scale = 256;
  hp.sources["loss_scale"] = "flag";
  auto o = loss_scale_options(hp, false);
  EXPECT_TRUE(o.dynamic);
  EXPECT_EQ(o.initial_scale, 256.0);
}

}  // namespace
}  // namespace fastnn::train
