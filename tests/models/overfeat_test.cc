// overfeat: shape, parameter count, TF-slim names and initializers. The
// training step and save/load round trip are in big_nets_slow_test.cc.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

// One 1000-class model (TF-slim's default dropout keep 0.5) shared by the
// tests (building it is most of their cost).
constexpr char kOverFeat[] = "overfeat";
using OverFeat = testing::SharedNetwork<kOverFeat, 1000, 50>;

TEST_F(OverFeat, OutputShape) {
  torch::NoGradGuard no_grad;
  auto out = model_->forward(torch::randn({1, 3, 231, 231}));
  testing::expect_logits(out, 1, 1000, /*aux=*/false);
}

TEST_F(OverFeat, ParameterCountMatchesTFSlim) {
  // num_classes = 1000. Weights + biases per layer:
  //   conv1 11*11*3*64+64          =      23,296
  //   conv2 5*5*64*256+256         =     409,856
  //   conv3 3*3*256*512+512        =   1,180,160
  //   conv4 3*3*512*1024+1024      =   4,719,616
  //   conv5 3*3*1024*1024+1024     =   9,438,208
  //   fc6   6*6*1024*3072+3072     = 113,249,280
  //   fc7   3072*4096+4096         =  12,587,008
  //   fc8   4096*1000+1000         =   4,097,000
  EXPECT_EQ(testing::trainable_parameters(*model_), 145704424);
}

TEST_F(OverFeat, TFSlimVariableNamesAndShapes) {
  EXPECT_EQ(model_variables(*model_).size(), 16u);
  testing::expect_variables_from_table(*model_, "overfeat:1000");
  EXPECT_EQ(model_->regularized_weights().size(), 8u);
}

TEST_F(OverFeat, ArgScopeBiases) {
  // overfeat_arg_scope: zero biases; fc6 and fc7 override with 0.1.
  for (const auto& v : model_variables(*model_)) {
    if (v.name.find("biases") == std::string::npos) continue;
    const bool fc = v.name == "overfeat/fc6/biases" || v.name == "overfeat/fc7/biases";
    EXPECT_TRUE(torch::allclose(v.tensor, torch::full_like(v.tensor, fc ? 0.1f : 0.0f))) << v.name;
  }
}

}  // namespace
}  // namespace fastnn::models
