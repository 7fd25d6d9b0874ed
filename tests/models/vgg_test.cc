// vgg_a, vgg_16, vgg_19: shape, parameter count, TF-slim names. The
// training step and save/load round trip are in big_nets_slow_test.cc.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

using testing::create;

const char* const kNames[] = {"vgg_a", "vgg_16", "vgg_19"};

TEST(Vgg, OutputShape) {
  torch::NoGradGuard no_grad;
  for (const char* name : kNames) {
    auto out = create(name, 1000)->forward(torch::randn({1, 3, 224, 224}));
    testing::expect_logits(out, 1, 1000, /*aux=*/false, name);
  }
}

TEST(Vgg, ParameterCountMatchesTFSlim) {
  // num_classes = 1000. 3x3 convs, weights + biases:
  //   3->64: 1,792        64->64: 36,928      64->128: 73,856
  //   128->128: 147,584   128->256: 295,168   256->256: 590,080
  //   256->512: 1,180,160 512->512: 2,359,808
  // fc6 7*7*512*4096+4096 + fc7 4096*4096+4096 + fc8 4096*1000+1000
  //   = 123,642,856.
  // vgg_a (A):  64 | 128 | 256,256 | 512,512 | 512,512
  // vgg_16 (D): 64,64 | 128,128 | 256 x3 | 512 x3 | 512 x3 (138.4M, the
  //   paper's 138M)
  // vgg_19 (E): 64,64 | 128,128 | 256 x4 | 512 x4 | 512 x4 (the paper's 144M)
  const int64_t fc = 123642856;
  EXPECT_EQ(testing::trainable_parameters(*create("vgg_a", 1000)),
            1792 + 73856 + 295168 + 590080 + 1180160 + 3 * 2359808 + fc);
  EXPECT_EQ(testing::trainable_parameters(*create("vgg_16", 1000)), 138357544);
  EXPECT_EQ(138357544,
            1792 + 36928 + 73856 + 147584 + 295168 + 2 * 590080 + 1180160 + 5 * 2359808 + fc);
  EXPECT_EQ(testing::trainable_parameters(*create("vgg_19", 1000)), 143667240);
  EXPECT_EQ(143667240,
            1792 + 36928 + 73856 + 147584 + 295168 + 3 * 590080 + 1180160 + 7 * 2359808 + fc);
}

TEST(Vgg, TFSlimVariableNamesAndShapes) {
  auto m16 = create("vgg_16", 1000);
  EXPECT_EQ(model_variables(*m16).size(), 2u * 16);
  EXPECT_EQ(m16->regularized_weights().size(), 16u);
  testing::expect_variables_from_table(*m16, "vgg_16:1000");
  auto ma = create("vgg_a", 1000);
  EXPECT_EQ(model_variables(*ma).size(), 2u * 11);
  testing::expect_variables_from_table(*ma, "vgg_a:1000");
  auto m19 = create("vgg_19", 1000);
  EXPECT_EQ(model_variables(*m19).size(), 2u * 19);
  testing::expect_variables_from_table(*m19, "vgg_19:1000");
}

}  // namespace
}  // namespace fastnn::models
