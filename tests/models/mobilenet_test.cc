// mobilenet_v1 (+ _075, _050, _025) and mobilenet_v2 (+ _140, _035): output
// shapes, parameter counts against TF-slim, variable names and shapes,
// depth rounding, one training step and a save/load round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/mobilenet_v2.h"
#include "tests/models/net_checks.h"

namespace fastnn::models::testing {
namespace {

// Counts use num_classes = 1001, the class count of TF-slim's ImageNet
// MobileNet checkpoints (mobilenet_v2's default). Per conv: kh * kw * in *
// out weights (depthwise 3 * 3 * C) plus BatchNorm beta and gamma (the
// MobileNet scopes set scale=True); logits in * 1001 + 1001.

const char* const kV1Names[] = {"mobilenet_v1", "mobilenet_v1_075", "mobilenet_v1_050",
                                "mobilenet_v1_025"};
const char* const kV2Names[] = {"mobilenet_v2", "mobilenet_v2_140", "mobilenet_v2_035"};

// Expects each {name, count} network's trainable parameter count.
void expect_parameter_counts(const std::vector<std::pair<const char*, int64_t>>& counts) {
  for (const auto& [name, count] : counts) {
    EXPECT_EQ(trainable_parameters(*create(name, 1001)), count) << name;
  }
}

TEST(MobileNet, OutputShapes) {
  auto expect_output = [](const char* name) {
    expect_logits(eval_forward(*create(name, 1001), 2, 224), 2, 1001, /*aux=*/false, name);
  };
  for (const char* name : kV1Names) expect_output(name);
  for (const char* name : kV2Names) expect_output(name);
}

// Depths d(x) = max(int(x * multiplier), 8) for the layer list 32, then
// (3x3 depthwise on C, 1x1 to D) for D in 64, 128, 128, 256, 256, 512,
// 512 x 5, 1024, 1024. For 1.0: conv weights 3,185,088 (TF-slim's layer
// table) + 2 x 10,944 BatchNorm channels + logits 1024 * 1001 + 1001.
TEST(MobileNetV1, ParameterCountsMatchTFSlim) {
  expect_parameter_counts({
      {"mobilenet_v1", 3185088 + 2 * 10944 + 1026025},  // 4,233,001
      // 0.75: conv weights 1,800,144 (TF-slim's table), 8,208 BN channels,
      // logits 768 * 1001 + 1001.
      {"mobilenet_v1_075", 1800144 + 2 * 8208 + 769769},  // 2,586,329
      // 0.5: conv weights 807,648; 5,472 BN channels; logits 512 * 1001 +
      // 1001.
      {"mobilenet_v1_050", 807648 + 2 * 5472 + 513513},  // 1,332,105
      // 0.25: conv weights 207,600; 2,736 BN channels; logits 256 * 1001 +
      // 1001.
      {"mobilenet_v1_025", 207600 + 2 * 2736 + 257257},  // 470,329
  });
}

TEST(MobileNetV1, TFSlimVariables) {
  auto m = create("mobilenet_v1", 1001);
  expect_variables_from_table(*m, "mobilenet_v1:1001");
  // Conv2d_0 + 13 pointwise + logits; depthwise filters are not regularized.
  EXPECT_EQ(m->regularized_weights().size(), 15u);
  torch::manual_seed(3);
  auto w = variable(*m, "MobilenetV1/Conv2d_13_pointwise/weights");
  EXPECT_NEAR(w.std().item<double>(), truncated_std(0.09), 2e-3);

  auto q = create("mobilenet_v1_025", 1001);
  expect_variables_from_table(*q, "mobilenet_v1_025:1001");
}

TEST(MobileNetV2, MakeDivisibleFollowsTFSlim) {
  EXPECT_EQ(make_divisible(32 * 0.35, 8), 16);  // 8 would lose > 10%
  EXPECT_EQ(make_divisible(16 * 0.35, 8), 8);
  EXPECT_EQ(make_divisible(16 * 1.4, 8), 24);
  EXPECT_EQ(make_divisible(96 * 1.4, 8), 136);
  EXPECT_EQ(make_divisible(1280 * 1.4, 8), 1792);
}

// Per block (expand 1x1 when wider than the input, depthwise 3x3, project
// 1x1; expansion _make_divisible(6 * in, 8)), every conv with BN gamma and
// beta. Depth lists after rounding:
//   1.0:  32 | 16 24 24 32 32 32 64 64 64 64 96 96 96 160 160 160 320 | 1280
//   1.4:  48 | 24 32 32 48 48 48 88 88 88 88 136 136 136 224 224 224 448 | 1792
//   0.35: 16 | 8 8 8 16 16 16 24 24 24 24 32 32 32 56 56 56 112 | 1280
// (finegrain_classification_mode keeps 1280).
TEST(MobileNetV2, ParameterCountsMatchTFSlim) {
  expect_parameter_counts({
      // 3,504,872 at 1000 classes (the published trainable count of
      // MobileNetV2 1.0) + 1281 for the 1001st class.
      {"mobilenet_v2", 3504872 + 1281},  // 3,506,153
      // Body 4,315,776 (summed from the 1.4 depth list) + 1792 * 1001 +
      // 1001.
      {"mobilenet_v2_140", 4315776 + 1794793},  // 6,110,569
      // Body 396,128 (from the 0.35 depth list) + 1280 * 1001 + 1001.
      {"mobilenet_v2_035", 396128 + 1282281},  // 1,678,409
  });
}

TEST(MobileNetV2, TFSlimVariables) {
  auto m = create("mobilenet_v2", 1001);
  expect_variables_from_table(*m, "mobilenet_v2:1001");
  // The first block has no expand conv (expansion factor 1).
  EXPECT_EQ(count_named(*m, "expanded_conv/expand/weights"), 0);
  // Conv + 16 expand + 17 project + Conv_1 + logits.
  EXPECT_EQ(m->regularized_weights().size(), 36u);

  expect_variables_from_table(*create("mobilenet_v2_140", 1001), "mobilenet_v2_140:1001");
  expect_variables_from_table(*create("mobilenet_v2_035", 1001), "mobilenet_v2_035:1001");
}

TEST(MobileNet, OneTrainingStepLowersTheLoss) {
  for (const char* name : {"mobilenet_v1", "mobilenet_v1_025", "mobilenet_v2", "mobilenet_v2_140",
                           "mobilenet_v2_035", "mobilenet_v1_075", "mobilenet_v1_050"}) {
    expect_fixed_lr_step_lowers_loss(name, 64, 1e-6);
  }
}

TEST(MobileNet, SaveLoadRoundTrip) {
  for (const char* name : kV1Names) expect_round_trip(name, 64);
  for (const char* name : kV2Names) expect_round_trip(name, 64);
}

}  // namespace
}  // namespace fastnn::models::testing
