// inception_resnet_v2: shapes, parameter count, TF-slim names (slim.repeat
// scopes), residual scales, regularized variables, initializers, the
// smallest input, one training step and a save/load round trip.
#include "models/inception_resnet_v2.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models::testing {
namespace {

// TF-slim's ImageNet checkpoints for this network have 1001 classes.
constexpr int64_t kClasses = 1001;
// Smallest side whose last block17 map (5x5) still fits the AuxLogits 5x5
// pool: 107 -> 53 -> 51 -> 25 (MaxPool_3a) -> 23 (4a) -> 11 (5a) -> 5 (6a).
constexpr int64_t kMinSize = 107;

constexpr char kInceptionResnetV2[] = "inception_resnet_v2";
using InceptionResnetV2 = SharedNetwork<kInceptionResnetV2, kClasses>;

TEST_F(InceptionResnetV2, OutputShapesAtDefaultSize) {
  expect_default_size_outputs(*model_, kInceptionResnetV2, kClasses, 299);
}

TEST_F(InceptionResnetV2, ParameterCountMatchesTFSlim) {
  const int64_t n = trainable_parameters(*model_);
  // Trainable variables by hand: conv k_h*k_w*in*out + out (BatchNorm/beta,
  // no gamma, or biases for the blocks' Conv2d_1x1); fc in*out + out.
  //   stem Conv2d_1a/2a/2b/3b/4a                    172,272
  //   Mixed_5b (192 -> 320)                         267,792
  //   block35 (320; up 128->320)    122,928 x 10 = 1,229,280
  //   Mixed_6a (320 -> 1088)                      2,663,680
  //   block17 (1088; up 384->1088) 1,126,112 x 20 = 22,522,240
  //   Mixed_7a (1088 -> 2080)                     3,878,912
  //   block8 (2080; up 448->2080) 2,034,560 x 10 = 20,345,600 (9 + Block8)
  //   Conv2d_7b_1x1 (2080 -> 1536)                3,196,416
  //   AuxLogits 1x1 1088->128, 5x5 128->768, fc 768->1001   3,367,529
  //   Logits fc 1536->1001                        1,538,537
  // Total 59,182,258. Without AuxLogits 55,814,729: the published ~55.9M
  // (Keras' InceptionResNetV2 lists 55,813,192 trainable for 1000 classes,
  // 1,537 fewer).
  EXPECT_EQ(n, 59182258);
}

TEST_F(InceptionResnetV2, TFSlimVariableNames) {
  auto vars = variables();
  const std::string s = "InceptionResnetV2/";
  expect_variables_from_table(*model_, "inception_resnet_v2:1001");
  for (const auto& bad :
       {"Repeat/block35_11/Conv2d_1x1/weights", "Repeat_2/block8_10/Conv2d_1x1/weights",
        "Block8/Conv2d_1x1/BatchNorm/beta"}) {
    EXPECT_FALSE(vars.count(s + bad)) << bad;
  }
  int64_t convs = 0;
  for (const auto& [name, t] : vars) {
    EXPECT_EQ(name.find("gamma"), std::string::npos) << name;
    if (t.dim() == 4) ++convs;
  }
  // stem 5, Mixed_5b 7, block35 7 x 10, Mixed_6a 4, block17 5 x 20,
  // Mixed_7a 7, block8 5 x 10, Conv2d_7b_1x1, AuxLogits 2.
  EXPECT_EQ(convs, 246);
  // The arg_scope sets weights_ and biases_regularizer on conv2d and
  // fully_connected: 246 + 2 weights, 40 block biases + 2 fc biases.
  EXPECT_EQ(model_->regularized_weights().size(), 248u + 42);
}

TEST_F(InceptionResnetV2, XavierInitializers) {
  auto vars = variables();
  // No initializer in the arg_scope: slim's Xavier-uniform,
  // U(-b, b), b = sqrt(6 / (fan_in + fan_out)).
  expect_xavier_uniform(vars["InceptionResnetV2/Conv2d_7b_1x1/weights"], 2080, 1536, 0.0,
                        "Conv2d_7b_1x1");
  EXPECT_EQ(vars["InceptionResnetV2/Block8/Conv2d_1x1/biases"].abs().max().item<float>(), 0.0f);
}

// A block's output with Conv2d_1x1 zeroed except its biases (1): ReLU(x +
// scale) for the repeated blocks, x + 1 for the final Block8.
TEST_F(InceptionResnetV2, ResidualScalesAndFinalActivation) {
  auto modules = model_->named_modules();
  struct Case {
    std::string path;
    int64_t channels, side;
    float input, expected;
  };
  const std::vector<Case> cases = {{"Repeat.block35_4", 320, 5, 0.f, 0.17f},
                                   {"Repeat_1.block17_7", 1088, 3, 0.f, 0.10f},
                                   {"Repeat_2.block8_2", 2080, 2, 0.f, 0.20f},
                                   {"Repeat_2.block8_2", 2080, 2, -5.f, 0.f},
                                   {"Block8", 2080, 2, -5.f, -4.f}};
  torch::NoGradGuard no_grad;
  for (const auto& c : cases) {
    auto block = std::dynamic_pointer_cast<InceptionResnetBlockImpl>(modules[c.path]);
    ASSERT_TRUE(block) << c.path;
    auto params = block->named_parameters(/*recurse=*/true);
    auto saved_w = params["Conv2d_1x1.weight"].clone();
    auto saved_b = params["Conv2d_1x1.bias"].clone();
    params["Conv2d_1x1.weight"].zero_();
    params["Conv2d_1x1.bias"].fill_(1.0);
    block->eval();
    auto y = block->forward(torch::full({1, c.channels, c.side, c.side}, c.input));
    EXPECT_TRUE(torch::allclose(y, torch::full_like(y, c.expected)))
        << c.path << " input " << c.input;
    params["Conv2d_1x1.weight"].copy_(saved_w);
    params["Conv2d_1x1.bias"].copy_(saved_b);
  }
}

TEST(InceptionResnetV2Small, SmallestInput) {
  expect_smallest_input("inception_resnet_v2", kClasses, kMinSize);
}

TEST(InceptionResnetV2Small, OneTrainingStepLowersTheLoss) {
  expect_first_order_step_lowers_loss("inception_resnet_v2", kClasses, kMinSize);
}

// Every variable copied into a fresh network after a training pass moved
// the BatchNorm statistics: the same logits and auxiliary logits.
TEST(InceptionResnetV2Small, SaveLoadRoundTrip) {
  expect_round_trip("inception_resnet_v2", kMinSize);
}

}  // namespace
}  // namespace fastnn::models::testing
