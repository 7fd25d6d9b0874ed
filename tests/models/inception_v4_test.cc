// inception_v4: shapes, parameter count, TF-slim names, initializers, the
// smallest input, one training step and a save/load round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models::testing {
namespace {

// TF-slim's ImageNet checkpoints for this network have 1001 classes.
constexpr int64_t kClasses = 1001;
// Smallest side whose Mixed_6h map (5x5) still fits the AuxLogits 5x5 pool:
// 107 -> 53 -> 51 -> 25 (Mixed_3a) -> 23 (4a) -> 11 (5a) -> 5 (6a).
constexpr int64_t kMinSize = 107;

constexpr char kInceptionV4[] = "inception_v4";
using InceptionV4 = SharedNetwork<kInceptionV4, kClasses>;

TEST_F(InceptionV4, OutputShapesAtDefaultSize) {
  expect_default_size_outputs(*model_, kInceptionV4, kClasses, 299);
}

TEST_F(InceptionV4, ParameterCountMatchesTFSlim) {
  const int64_t n = trainable_parameters(*model_);
  // Trainable variables by hand: conv k_h*k_w*in*out + out (BatchNorm/beta,
  // no gamma); fc in*out + out. Per block:
  //   stem Conv2d_1a/2a/2b                       28,640
  //   Mixed_3a 55,392; Mixed_4a 188,864; Mixed_5a 331,968
  //   Inception-A (in 384)      317,024 x 4 =  1,268,096
  //   Reduction-A Mixed_6a                    2,305,056
  //   Inception-B (in 1024)   2,933,984 x 7 = 20,537,888
  //   Reduction-B Mixed_7a                    2,745,856
  //   Inception-C (in 1536)   4,549,824 x 3 = 13,649,472
  //   AuxLogits 1x1 1024->128, 5x5 128->768, fc 768->1001   3,359,337
  //   Logits fc 1536->1001                    1,538,537
  // Total 46,009,106; without AuxLogits 42,649,769 (the ~42.7M usually
  // quoted for Inception-v4).
  EXPECT_EQ(n, 46009106);
}

TEST_F(InceptionV4, TFSlimVariableNames) {
  auto vars = variables();
  expect_variables_from_table(*model_, "inception_v4:1001");
  int64_t convs = 0;
  for (const auto& [name, t] : vars) {
    EXPECT_EQ(name.find("gamma"), std::string::npos) << name;
    EXPECT_EQ(name.find("Mixed_6i"), std::string::npos) << name;
    if (t.dim() == 4) ++convs;
  }
  // 149 convs in the body + 2 in AuxLogits; each has weights and beta,
  // moving_mean, moving_variance.
  EXPECT_EQ(convs, 151);
  EXPECT_EQ(vars.size(), 151u * 4 + 4);
  // inception_arg_scope regularizes conv and fc weights only.
  EXPECT_EQ(model_->regularized_weights().size(), 151u + 2);
}

TEST_F(InceptionV4, Initializers) {
  auto vars = variables();
  // variance_scaling_initializer(): truncated normal (2 sigma) with
  // sigma = sqrt(1.3 * 2 / fan_in); its std is 0.8796 sigma.
  expect_truncated_normal(vars["InceptionV4/Mixed_6b/Branch_0/Conv2d_0a_1x1/weights"],
                          std::sqrt(1.3 * 2.0 / 1024), "Mixed_6b");
  // fully_connected keeps Xavier-uniform: U(-b, b), b = sqrt(6/(in+out)),
  // up to float rounding.
  expect_xavier_uniform(vars["InceptionV4/Logits/Logits/weights"], 1536, kClasses, 1e-6, "Logits");
  EXPECT_EQ(vars["InceptionV4/Logits/Logits/biases"].abs().max().item<float>(), 0.0f);
}

TEST(InceptionV4Small, SmallestInput) { expect_smallest_input("inception_v4", kClasses, kMinSize); }

TEST(InceptionV4Small, OneTrainingStepLowersTheLoss) {
  expect_first_order_step_lowers_loss("inception_v4", kClasses, kMinSize);
}

// Every variable copied into a fresh network after a training pass moved
// the BatchNorm statistics: the same logits and auxiliary logits.
TEST(InceptionV4Small, SaveLoadRoundTrip) { expect_round_trip("inception_v4", kMinSize); }

}  // namespace
}  // namespace fastnn::models::testing
