// resnet_v1_{50,101,152,200} and resnet_v2_{50,101,152,200}: shape,
// parameter count, TF-slim names; one training step and save/load for the
// 50-layer nets (the deeper ones are in big_nets_slow_test.cc).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <string>

#include "models/layers.h"
#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

using testing::create;

struct Golden {
  const char* name;
  std::array<int64_t, 4> units;
  int64_t num_classes;
  int64_t parameters;
};

// TF-slim's ImageNet checkpoints: resnet_v1 with 1000 classes, resnet_v2
// with 1001 (background class). resnet_v1_50's count is the usual 25.6M for
// ResNet-50 (torchvision's resnet50 has the same layer shapes and count),
// 101 and 152 likewise (44.5M, 60.2M). resnet_v2_50 with 1000 classes would
// have 25,568,360, Keras' ResNet50V2 trainable count (same shapes). All eight
// equal slim_resnet_parameters below.
const Golden kGoldens[] = {
    {"resnet_v1_50", {3, 4, 6, 3}, 1000, 25557032},
    {"resnet_v1_101", {3, 4, 23, 3}, 1000, 44549160},
    {"resnet_v1_152", {3, 8, 36, 3}, 1000, 60192808},
    {"resnet_v1_200", {3, 24, 36, 3}, 1000, 64673832},
    {"resnet_v2_50", {3, 4, 6, 3}, 1001, 25570409},
    {"resnet_v2_101", {3, 4, 23, 3}, 1001, 44579945},
    {"resnet_v2_152", {3, 8, 36, 3}, 1001, 60238953},
    {"resnet_v2_200", {3, 24, 36, 3}, 1001, 64728169},
};

// The count summed from TF-slim's layer shapes. A conv k x k, in -> out
// has k*k*in*out weights plus either biases (out) or BatchNorm beta and
// gamma (2*out). v1: every conv but the logits has BatchNorm. v2: the root
// conv1, the shortcuts and each conv3 have biases instead; each unit adds a
// preact BatchNorm over its input and the network a postnorm over 2048.
int64_t slim_resnet_parameters(bool v2, const std::array<int64_t, 4>& units, int64_t num_classes) {
  auto conv = [](int64_t k, int64_t in, int64_t out, bool bn) {
    return k * k * in * out + (bn ? 2 * out : out);
  };
  int64_t n = conv(7, 3, 64, !v2);
  int64_t in = 64;
  const int64_t base[] = {64, 128, 256, 512};
  for (int b = 0; b < 4; ++b) {
    const int64_t depth = 4 * base[b];
    for (int64_t u = 0; u < units[b]; ++u) {
      if (v2) n += 2 * in;
      if (in != depth) n += conv(1, in, depth, !v2);  // shortcut
      n += conv(1, in, base[b], true) + conv(3, base[b], base[b], true) +
           conv(1, base[b], depth, !v2);
      in = depth;
    }
  }
  if (v2) n += 2 * in;
  return n + conv(1, in, num_classes, false);
}

TEST(ResNet, ParameterCountMatchesTFSlim) {
  for (const auto& g : kGoldens) {
    const bool v2 = std::string(g.name).find("_v2_") != std::string::npos;
    EXPECT_EQ(slim_resnet_parameters(v2, g.units, g.num_classes), g.parameters) << g.name;
    auto m = create(g.name, g.num_classes);
    EXPECT_EQ(testing::trainable_parameters(*m), g.parameters) << g.name;
    // Conv weights only (every conv, the logits included).
    const int64_t convs = 3 * (g.units[0] + g.units[1] + g.units[2] + g.units[3]) + 4 + 2;
    EXPECT_EQ(static_cast<int64_t>(m->regularized_weights().size()), convs) << g.name;
  }
}

TEST(ResNet, OutputShapeAtDefaultSize) {
  torch::NoGradGuard no_grad;
  for (const auto& g : kGoldens) {
    auto m = create(g.name, g.num_classes);
    m->eval();
    auto out = m->forward(torch::randn({1, 3, 224, 224}));
    EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, g.num_classes})) << g.name;
    EXPECT_FALSE(out.aux_logits.defined());
  }
}

TEST(ResNet, V1VariableNamesAndShapes) {
  auto m = create("resnet_v1_50", 1000);
  // conv1: weights + 4 BatchNorm; 16 units x 3 convs x 5; 4 shortcuts x 5;
  // logits weights + biases.
  EXPECT_EQ(model_variables(*m).size(), 5u + 16 * 15 + 4 * 5 + 2);
  testing::expect_variables_from_table(*m, "resnet_v1_50:1000");
  const auto shapes = testing::tf_shapes(*m);
  EXPECT_EQ(shapes.count("resnet_v1_50/block1/unit_2/bottleneck_v1/shortcut/weights"), 0u);
  EXPECT_EQ(shapes.count("resnet_v1_50/logits/BatchNorm/beta"), 0u);
}

TEST(ResNet, V2VariableNamesAndShapes) {
  auto m = create("resnet_v2_50", 1001);
  // conv1 weights + biases; 16 units x (preact 4 + conv1 5 + conv2 5 +
  // conv3 2); 4 shortcuts x 2; postnorm 4; logits 2.
  EXPECT_EQ(model_variables(*m).size(), 2u + 16 * 16 + 4 * 2 + 4 + 2);
  testing::expect_variables_from_table(*m, "resnet_v2_50:1001");
  const auto shapes = testing::tf_shapes(*m);
  EXPECT_EQ(shapes.count("resnet_v2_50/conv1/BatchNorm/beta"), 0u);
  EXPECT_EQ(shapes.count("resnet_v2_50/block1/unit_1/bottleneck_v2/conv3/BatchNorm/beta"), 0u);
}

TEST(ResNet, StrideSitsOnConv2OfTheLastUnitOfEachBlock) {
  // resnet_v1_block/resnet_v2_block: stride 1 in every unit but the last;
  // a strided conv2 is conv2d_same: (k - 1) / 2 = 1 zero on each side (the
  // convolution's own padding), then VALID.
  for (const char* name : {"resnet_v1_50", "resnet_v2_50"}) {
    auto m = create(name, 10);
    const std::string unit =
        std::string(name).find("_v1_") != std::string::npos ? "bottleneck_v1" : "bottleneck_v2";
    auto modules = m->named_modules();
    auto conv2_side = [&](int block, int u, int64_t side) {
      const auto key =
          "block" + std::to_string(block) + ".unit_" + std::to_string(u) + "." + unit + ".conv2";
      auto* conv2 = modules[key]->as<SlimConvImpl>();
      const int64_t c = 64 << (block - 1);
      torch::NoGradGuard no_grad;
      return conv2->forward(torch::randn({1, c, side, side})).size(2);
    };
    const int last[] = {3, 4, 6, 3};
    for (int b = 1; b <= 4; ++b) {
      EXPECT_EQ(conv2_side(b, 1, 9), 9) << name << " block" << b;
      // 8 padded by 1 + 1 = 10: VALID 3x3/2 gives 4; stride 1 SAME gives 8.
      EXPECT_EQ(conv2_side(b, last[b - 1], 8), b < 4 ? 4 : 8) << name << " block" << b;
    }
  }
}

TEST(ResNet, OneTrainingStepLowersTheLoss) {
  // float64: see testing::sgd_step. The deeper nets: big_nets_slow_test.cc.
  for (const char* name : {"resnet_v1_50", "resnet_v2_50"}) {
    testing::expect_sgd_step_lowers_loss(name, 64, 2, torch::kFloat64, 1e-5);
  }
}

TEST(ResNet, SaveLoadRoundTrip) {
  for (const char* name : {"resnet_v1_50", "resnet_v2_50"}) {
    testing::expect_round_trip(name, 64);
  }
}

}  // namespace
}  // namespace fastnn::models
