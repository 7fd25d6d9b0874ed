// cifarnet: tf.nn.lrn semantics, shape, parameter count, TF-slim names,
// regularized weights, initializers, one training step, save/load.
#include "models/cifarnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

using testing::create;

TEST(CifarNet, LrnMatchesTFFormulaOnLiterals) {
  // depth_radius 1, bias 1, alpha 0.5, beta 1 on channels (1, 2, 3):
  // sums of squares 1+4, 1+4+9, 4+9 -> 1/3.5, 2/8, 3/7.5.
  auto x = torch::tensor({1.0f, 2.0f, 3.0f}).reshape({1, 3, 1, 1});
  auto y = tf_lrn(x, 1, 1.0, 0.5, 1.0).flatten();
  EXPECT_NEAR(y[0].item<float>(), 1 / 3.5f, 1e-6);
  EXPECT_NEAR(y[1].item<float>(), 0.25f, 1e-6);
  EXPECT_NEAR(y[2].item<float>(), 0.4f, 1e-6);
}

TEST(CifarNet, LrnMatchesTFFormulaWithCifarNetParameters) {
  // tf.nn.lrn(depth_radius=4, bias=1.0, alpha=0.001/9.0, beta=0.75):
  // y[c] = x[c] / (1 + alpha * sum_{|c'-c|<=4} x[c']^2)^0.75, computed here
  // channel by channel (the window is cut at the edges).
  torch::manual_seed(3);
  const int64_t channels = 12;
  auto x = torch::randn({2, channels, 3, 2}, torch::kFloat64) * 20;
  auto y = tf_lrn(x, 4, 1.0, 0.001 / 9.0, 0.75);
  auto a = x.accessor<double, 4>();
  auto b = y.accessor<double, 4>();
  double worst = 0;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t h = 0; h < 3; ++h) {
        for (int64_t w = 0; w < 2; ++w) {
          double sum = 0;
          for (int64_t k = std::max<int64_t>(0, c - 4); k <= std::min<int64_t>(channels - 1, c + 4);
               ++k) {
            sum += a[n][k][h][w] * a[n][k][h][w];
          }
          const double want = a[n][c][h][w] / std::pow(1.0 + 0.001 / 9.0 * sum, 0.75);
          worst = std::max(worst, std::abs(b[n][c][h][w] - want));
        }
      }
    }
  }
  EXPECT_LT(worst, 1e-9);
  // The normalization is strong enough here to matter.
  EXPECT_GT((x - y).abs().max().item<double>(), 1.0);
}

TEST(CifarNet, OutputShape) {
  auto out = create("cifarnet", 10)->forward(torch::randn({2, 3, 32, 32}));
  testing::expect_logits(out, 2, 10, /*aux=*/false);
}

TEST(CifarNet, ParameterCountMatchesTFSlim) {
  // num_classes = 10 (CIFAR-10, cifarnet's default). conv1 5*5*3*64+64,
  // conv2 5*5*64*64+64, fc3 8*8*64*384+384, fc4 384*192+192,
  // logits 192*10+10.
  auto m = create("cifarnet", 10);
  EXPECT_EQ(testing::trainable_parameters(*m),
            4864 + 102464 + 1573248 + 73920 + 1930);  // 1,756,426
}

TEST(CifarNet, TFSlimVariableNamesAndShapes) {
  auto m = create("cifarnet", 10);
  std::vector<std::string> names;
  for (const auto& v : model_variables(*m)) names.push_back(v.name);
  const std::vector<std::string> expected = {"CifarNet/conv1/weights",  "CifarNet/conv1/biases",
                                             "CifarNet/conv2/weights",  "CifarNet/conv2/biases",
                                             "CifarNet/fc3/weights",    "CifarNet/fc3/biases",
                                             "CifarNet/fc4/weights",    "CifarNet/fc4/biases",
                                             "CifarNet/logits/weights", "CifarNet/logits/biases"};
  EXPECT_EQ(names, expected);
  testing::expect_variables_from_table(*m, "cifarnet:10");
}

TEST(CifarNet, RegularizesFullyConnectedWeightsOnly) {
  auto m = create("cifarnet", 10);
  auto reg = m->regularized_weights();
  ASSERT_EQ(reg.size(), 2u);
  EXPECT_EQ(reg[0].sizes(), (std::vector<int64_t>{384, 4096}));  // fc3
  EXPECT_EQ(reg[1].sizes(), (std::vector<int64_t>{192, 384}));   // fc4
}

TEST(CifarNet, ArgScopeInitializers) {
  torch::manual_seed(1);
  auto m = create("cifarnet", 10);
  // Weights: truncated normals cut at two stddevs (conv 0.05, fc 0.04,
  // logits 1/192). Biases: 0.1 on fc3 and fc4, zero elsewhere.
  const std::map<std::string, double> stddev = {{"CifarNet/conv1/weights", 0.05},
                                                {"CifarNet/conv2/weights", 0.05},
                                                {"CifarNet/fc3/weights", 0.04},
                                                {"CifarNet/fc4/weights", 0.04},
                                                {"CifarNet/logits/weights", 1 / 192.0}};
  for (const auto& v : model_variables(*m)) {
    const auto& t = v.tensor;
    if (auto it = stddev.find(v.name); it != stddev.end()) {
      EXPECT_LE(t.abs().max().item<double>(), 2 * it->second + 1e-7) << v.name;
      if (t.numel() > 10000) {
        // A normal truncated at two sigma has std 0.8796 sigma.
        EXPECT_NEAR(t.std().item<double>(), 0.8796 * it->second, 0.05 * it->second) << v.name;
      }
    } else if (v.name == "CifarNet/fc3/biases" || v.name == "CifarNet/fc4/biases") {
      EXPECT_TRUE(torch::allclose(t, torch::full_like(t, 0.1))) << v.name;
    } else {
      EXPECT_EQ(t.abs().max().item<float>(), 0.0f) << v.name;
    }
  }
}

TEST(CifarNet, ImageSizeSizesFc3) {
  ModelOptions o;
  o.num_classes = 10;
  o.image_size = 28;  // 28 -> 14 -> 7 after the two VALID max-pools
  auto m = find_model("cifarnet").create(o);
  testing::expect_variables_from_table(*m, "cifarnet:10:28");
  auto out = m->forward(torch::randn({1, 3, 28, 28}));
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, 10}));
}

TEST(CifarNet, OneTrainingStepLowersTheLoss) {
  testing::expect_sgd_step_lowers_loss("cifarnet", 32, 8);
}

TEST(CifarNet, SaveLoadRoundTrip) { testing::expect_round_trip("cifarnet", 32); }

}  // namespace
}  // namespace fastnn::models
