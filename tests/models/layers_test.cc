// TF-slim layer semantics: SAME padding amounts, pools that ignore padding,
// conv shapes and variable names.
#include "models/layers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/classifier.h"

namespace fastnn::models {
namespace {

TEST(Layers, SamePaddingFollowsTF) {
  // out = ceil(in / stride); total = (out - 1) * stride + k - in; extra after.
  EXPECT_EQ(same_padding(299, 3, 2), std::make_pair(int64_t{1}, int64_t{1}));  // 150
  EXPECT_EQ(same_padding(300, 3, 2), std::make_pair(int64_t{0}, int64_t{1}));  // 150
  EXPECT_EQ(same_padding(224, 7, 2), std::make_pair(int64_t{2}, int64_t{3}));  // 112
  EXPECT_EQ(same_padding(28, 5, 1), std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(same_padding(7, 3, 2), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(same_padding(8, 1, 2), std::make_pair(int64_t{0}, int64_t{0}));
}

TEST(Layers, MaxPoolSameIgnoresPadding) {
  auto x = -torch::arange(16, torch::kFloat32).reshape({1, 1, 4, 4}) - 1;
  auto y = max_pool(x, 3, 2, Padding::kSame);  // 4 -> 2, padding (0, 1)
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  // Window at (0,0) covers rows/cols 0..2: max is -1 (not the zero pad).
  EXPECT_FLOAT_EQ(y[0][0][0][0].item<float>(), -1.0f);
  // Window at (1,1) covers rows/cols 2..3 plus padding: max is x[2][2] = -11.
  EXPECT_FLOAT_EQ(y[0][0][1][1].item<float>(), -11.0f);
}

TEST(Layers, AvgPoolSameCountsOnlyRealElements) {
  auto x = torch::ones({1, 1, 4, 4});
  for (auto p : {Padding::kSame}) {
    auto y = avg_pool(x, 3, 2, p);
    EXPECT_TRUE(torch::allclose(y, torch::ones_like(y)));
  }
  auto z = avg_pool(torch::ones({1, 2, 5, 5}), 3, 1, Padding::kSame);
  EXPECT_EQ(z.sizes(), (std::vector<int64_t>{1, 2, 5, 5}));
  EXPECT_TRUE(torch::allclose(z, torch::ones_like(z)));
}

TEST(Layers, SlimConvShapesAndNames) {
  struct Net : ClassifierImpl {
    Net() : ClassifierImpl("Net") {
      register_module("Conv2d_1a_3x3", SlimConv(conv(3, 32, 3, 2, Padding::kValid)));
      auto o = conv(32, 8, 3, 2);
      o.batch_norm = false;
      register_module("Logits", SlimConv(o));
      auto d = conv(32, 32, 3);
      d.depthwise = true;
      register_module("Conv2d_1_depthwise", SlimConv(d));
    }
    ModelOutput forward(torch::Tensor x) override { return {x, {}}; }
  } net;
  std::vector<std::string> names;
  for (const auto& v : model_variables(net)) names.push_back(v.name);
  std::vector<std::string> expected = {"Net/Conv2d_1a_3x3/weights",
                                       "Net/Conv2d_1a_3x3/BatchNorm/beta",
                                       "Net/Logits/weights",
                                       "Net/Logits/biases",
                                       "Net/Conv2d_1_depthwise/depthwise_weights",
                                       "Net/Conv2d_1_depthwise/BatchNorm/beta",
                                       "Net/Conv2d_1a_3x3/BatchNorm/moving_mean",
                                       "Net/Conv2d_1a_3x3/BatchNorm/moving_variance",
                                       "Net/Conv2d_1_depthwise/BatchNorm/moving_mean",
                                       "Net/Conv2d_1_depthwise/BatchNorm/moving_variance"};
  EXPECT_EQ(names, expected);

  SlimConv valid(conv(3, 32, 3, 2, Padding::kValid));
  EXPECT_EQ(valid->forward(torch::randn({1, 3, 299, 299})).size(2), 149);
  SlimConv same(conv(3, 4, 7, 2));
  EXPECT_EQ(same->forward(torch::randn({1, 3, 224, 224})).size(2), 112);
  EXPECT_EQ(same->forward(torch::randn({1, 3, 299, 299})).size(3), 150);
}

TEST(Layers, BatchNormUpdatesMovingStatisticsWithTFDecay) {
  BatchNormOptions o;
  o.decay = 0.9;
  TfBatchNorm bn(1, o);
  bn->train();
  auto x = torch::full({4, 1, 2, 2}, 3.0);
  bn->forward(x);
  auto mean = bn->named_buffers()["moving_mean"];
  EXPECT_NEAR(mean.item<float>(), 0.1 * 3.0, 1e-6);  // 0.9*0 + 0.1*3
}

TEST(Layers, VarianceScalingStddev) {
  auto w = torch::empty({256, 128, 3, 3});
  init_weight(w, Init{Init::kVarianceScaling, 2.0});
  // Truncated at 2 sigma: std = sigma * 0.8796, sigma = sqrt(1.3 * 2 / 1152).
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(1.3 * 2 / 1152.0) * 0.8796, 0.001);
}

TEST(Layers, TruncatedNormalStaysWithinTwoStddevsWithTFsMoments) {
  torch::manual_seed(3);
  auto w = torch::empty({1000, 1000});
  truncated_normal_(w, 0.5);
  EXPECT_LE(w.abs().max().item<double>(), 1.0);  // 2 x 0.5, every draw
  // N(0, 1) truncated at +-2: mean 0, std 0.8796; 1e6 draws, std error ~1e-3.
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.005);
  EXPECT_NEAR(w.std().item<double>(), 0.5 * 0.8796, 0.003);
  // Its shape, not only its moments: half of the draws lie within 0.6391
  // sigma of 0 (the median of |x|: (2 Phi(a) - 1) / (2 Phi(2) - 1) = 1/2).
  EXPECT_NEAR(w.abs().lt(0.5 * 0.6391).to(torch::kFloat64).mean().item<double>(), 0.5, 0.002);
  // A non-contiguous target (a transposed view) is filled in place, whole.
  auto base = torch::zeros({300, 200});
  auto view = base.t();
  truncated_normal_(view, 1.0);
  EXPECT_LE(base.abs().max().item<double>(), 2.0);
  EXPECT_EQ(base.eq(0).sum().item<int64_t>(), 0);
  EXPECT_NEAR(base.std().item<double>(), 0.8796, 0.02);
}

}  // namespace
}  // namespace fastnn::models
