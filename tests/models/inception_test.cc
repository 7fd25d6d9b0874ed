// inception_v1, inception_v2, inception_v3: output shapes, parameter counts
// against TF-slim, variable names and shapes, initializers, one training
// step and a save/load round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models::testing {
namespace {

// Counts below use num_classes = 1000, the default of TF-slim's
// inception_v1/v2/v3 functions. Per conv: kh * kw * in * out weights plus
// out BatchNorm betas (inception_arg_scope has no gamma); logits convs
// in * classes + classes.

TEST(InceptionV1, ParameterCountMatchesTFSlim) {
  auto m = create("inception_v1", 1000);
  // Stem (Conv2d_1a_7x7, 2b_1x1, 2c_3x3) 124,416; Mixed_3b 155,504;
  // 3c 339,584; 4b 363,888; 4c 424,584; 4d 485,528; 4e 572,608;
  // 4f 802,816; 5b 977,920; 5c 1,345,776; Logits 1024 * 1000 + 1000.
  EXPECT_EQ(trainable_parameters(*m),
            124416 + 155504 + 339584 + 363888 + 424584 + 485528 + 572608 + 802816 + 977920 +
                1345776 + 1025000);  // 6,617,624
}

TEST(InceptionV1, TFSlimVariables) {
  auto m = create("inception_v1", 1000);
  expect_variables_from_table(*m, "inception_v1:1000");
  EXPECT_EQ(count_named(*m, "BatchNorm/gamma"), 0);
  // 3 stem convs + 9 Mixed modules x 6 convs + logits.
  EXPECT_EQ(m->regularized_weights().size(), 58u);
}

TEST(InceptionV1, Initializers) {
  torch::manual_seed(3);
  auto m = create("inception_v1", 1000);
  // The body is trunc_normal(0.01); the logits keep variance scaling.
  auto w = variable(*m, "InceptionV1/Mixed_4f/Branch_1/Conv2d_0b_3x3/weights");
  EXPECT_NEAR(w.std().item<double>(), truncated_std(0.01), 3e-4);
  auto l = variable(*m, "InceptionV1/Logits/Conv2d_0c_1x1/weights");
  EXPECT_NEAR(l.std().item<double>(), truncated_std(std::sqrt(2.6 / 1024)), 1e-3);
}

TEST(InceptionV2, ParameterCountMatchesTFSlim) {
  auto m = create("inception_v2", 1000);
  // Stem 117,720: separable Conv2d_1a_7x7 (7*7*3*8 depthwise + 24*64
  // pointwise + 64 biases) + Conv2d_2b_1x1 + Conv2d_2c_3x3. Mixed_3b
  // 218,592; 3c 259,616; 4a 384,544; 4b 609,120; 4c 664,448; 4d 894,944;
  // 4e 1,106,976; 5a 1,438,720; 5b 2,180,672; 5c 2,277,984; Logits
  // 1024 * 1000 + 1000.
  EXPECT_EQ(trainable_parameters(*m),
            117720 + 218592 + 259616 + 384544 + 609120 + 664448 + 894944 + 1106976 + 1438720 +
                2180672 + 2277984 + 1025000);  // 11,178,336
}

TEST(InceptionV2, TFSlimVariables) {
  auto m = create("inception_v2", 1000);
  expect_variables_from_table(*m, "inception_v2:1000");
  EXPECT_EQ(count_named(*m, "Conv2d_1a_7x7/BatchNorm/beta"), 0);
  // Separable conv weights are not regularized: 2 stem convs + 8 Mixed x 7
  // + 2 reductions x 5 + logits.
  EXPECT_EQ(m->regularized_weights().size(), 69u);
}

TEST(InceptionV2, Initializers) {
  torch::manual_seed(3);
  auto m = create("inception_v2", 1000);
  auto dw = variable(*m, "InceptionV2/Conv2d_1a_7x7/depthwise_weights");
  EXPECT_LE(dw.abs().max().item<double>(), 2.0);  // trunc_normal(1.0)
  auto b1 = variable(*m, "InceptionV2/Mixed_4e/Branch_2/Conv2d_0a_1x1/weights");
  EXPECT_NEAR(b1.std().item<double>(), truncated_std(0.09), 3e-3);
  // Variance scaling: sqrt(1.3 * 2 / fan_in), fan_in = 3 * 3 * 64.
  auto c = variable(*m, "InceptionV2/Conv2d_2c_3x3/weights");
  EXPECT_NEAR(c.std().item<double>(), truncated_std(std::sqrt(2.6 / 576)), 1e-3);
}

TEST(InceptionV3, ParameterCountMatchesTFSlim) {
  auto m = create("inception_v3", 1000);
  // Stem (Conv2d_1a..4a) 172,272; Mixed_5b 255,440; 5c 276,976;
  // 5d 284,656; 6a 1,152,640; 6b 1,295,872; 6c 1,689,280; 6d 1,689,280;
  // 6e 2,140,032; 7a 1,697,024; 7b 5,041,344; 7c 6,073,536; Logits
  // 2048 * 1000 + 1000. Total 23,817,352, the published trainable count
  // of Inception v3 without its auxiliary head.
  const int64_t main = 172272 + 255440 + 276976 + 284656 + 1152640 + 1295872 + 1689280 + 1689280 +
                       2140032 + 1697024 + 5041344 + 6073536 + 2049000;
  // AuxLogits: Conv2d_1b_1x1 768*128 + 128, Conv2d_2a_5x5 5*5*128*768 +
  // 768, Conv2d_2b_1x1 768 * 1000 + 1000 = 3,325,800.
  const int64_t aux = 98432 + 2458368 + 769000;
  EXPECT_EQ(main, 23817352);
  EXPECT_EQ(trainable_parameters(*m), main + aux);  // 27,143,152
}

TEST(InceptionV3, TFSlimVariables) {
  auto m = create("inception_v3", 1000);
  expect_variables_from_table(*m, "inception_v3:1000");
  // Stem 5 + Mixed_5x 3 x 7 + 6a 4 + 6b..6e 4 x 10 + 7a 6 + 7b/7c 2 x 9 +
  // 3 aux + logits.
  EXPECT_EQ(m->regularized_weights().size(), 98u);
  auto aux = variable(*m, "InceptionV3/AuxLogits/Conv2d_2b_1x1/weights");
  EXPECT_LE(aux.abs().max().item<double>(), 0.002 + 1e-9);  // trunc(0.001)
}

TEST(InceptionV3, SmallInputsShrinkTheAuxKernel) {
  // TF-slim's half-size case: at 150 the map entering Conv2d_2a is 1x1.
  auto m = create("inception_v3", 10, 150);
  expect_variables_from_table(*m, "inception_v3:10:150");
  EXPECT_THROW(create("inception_v3", 10, 99), c10::Error);
}

// The checks every version shares: eval-mode logits (and, for v3, the
// auxiliary logits) at the default size, one SGD step (lr 1e-6) and a
// save/load round trip at a small size.
struct Version {
  const char* name;
  int64_t default_size;  // the OutputShape check's input side
  bool aux;              // whether eval mode gives auxiliary logits
  int64_t small_size;    // the training step's and round trip's side
};

class InceptionVersions : public ::testing::TestWithParam<Version> {};

TEST_P(InceptionVersions, OutputShape) {
  const auto& v = GetParam();
  auto out = eval_forward(*create(v.name, 1000), 1, v.default_size);
  expect_logits(out, 1, 1000, v.aux, v.name);
}

TEST_P(InceptionVersions, OneTrainingStepLowersTheLoss) {
  expect_fixed_lr_step_lowers_loss(GetParam().name, GetParam().small_size, 1e-6);
}

TEST_P(InceptionVersions, SaveLoadRoundTrip) {
  expect_round_trip(GetParam().name, GetParam().small_size);
}

INSTANTIATE_TEST_SUITE_P(All, InceptionVersions,
                         ::testing::Values(Version{"inception_v1", 224, false, 64},
                                           Version{"inception_v2", 224, false, 64},
                                           Version{"inception_v3", 299, true, 107}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fastnn::models::testing
