// alexnet_v2: shape, parameter count, TF-slim names, one training step,
// save/load, and the 224x224 input requirement.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

// One 1000-class model (TF-slim's default dropout keep 0.5) shared by the
// read-only tests (building it is most of their cost).
constexpr char kAlexNetV2[] = "alexnet_v2";
using AlexNetV2 = testing::SharedNetwork<kAlexNetV2, 1000, 50>;

TEST_F(AlexNetV2, OutputShape) {
  torch::NoGradGuard no_grad;
  auto out = model_->forward(torch::randn({2, 3, 224, 224}));
  testing::expect_logits(out, 2, 1000, /*aux=*/false);
}

TEST_F(AlexNetV2, ParameterCountMatchesTFSlim) {
  // num_classes = 1000. Weights + biases per layer:
  //   conv1 11*11*3*64+64          =     23,296
  //   conv2 5*5*64*192+192         =    307,392
  //   conv3 3*3*192*384+384        =    663,936
  //   conv4 3*3*384*384+384        =  1,327,488
  //   conv5 3*3*384*256+256        =    884,992
  //   fc6   5*5*256*4096+4096      = 26,218,496
  //   fc7   4096*4096+4096         = 16,781,312
  //   fc8   4096*1000+1000         =  4,097,000
  EXPECT_EQ(testing::trainable_parameters(*model_), 50303912);
}

TEST_F(AlexNetV2, TFSlimVariableNamesAndShapes) {
  EXPECT_EQ(model_variables(*model_).size(), 16u);
  testing::expect_variables_from_table(*model_, "alexnet_v2:1000");
  EXPECT_EQ(model_->regularized_weights().size(), 8u);
}

TEST_F(AlexNetV2, ArgScopeInitializers) {
  for (const auto& v : model_variables(*model_)) {
    const auto& t = v.tensor;
    if (v.name.find("biases") != std::string::npos) {
      // 0.1 everywhere except fc8.
      const float want = v.name == "alexnet_v2/fc8/biases" ? 0.0f : 0.1f;
      EXPECT_TRUE(torch::allclose(t, torch::full_like(t, want))) << v.name;
    } else if (v.name.rfind("alexnet_v2/fc", 0) == 0) {
      // truncated_normal(0.005): cut at two stddevs.
      EXPECT_LE(t.abs().max().item<float>(), 0.01f + 1e-7f) << v.name;
    } else {
      // xavier (uniform, fan_in + fan_out).
      const double limit =
          std::sqrt(6.0 / static_cast<double>(t[0].numel() + t.size(0) * t[0][0].numel()));
      EXPECT_LE(t.abs().max().item<double>(), limit) << v.name;
    }
  }
}

TEST_F(AlexNetV2, OtherInputSizesAreRejected) {
  torch::NoGradGuard no_grad;
  // 256: pool5 is 6x6, so fc6 (5x5 VALID) leaves a 2x2 map.
  EXPECT_THROW(model_->forward(torch::randn({1, 3, 256, 256})), c10::Error);
}

TEST(AlexNetV2Training, OneTrainingStepLowersTheLoss) {
  testing::expect_sgd_step_lowers_loss("alexnet_v2", 224, 2);
}

TEST(AlexNetV2Training, SaveLoadRoundTrip) { testing::expect_round_trip("alexnet_v2", 224); }

}  // namespace
}  // namespace fastnn::models
