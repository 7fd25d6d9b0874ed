// pnasnet_large and pnasnet_mobile: shapes, parameter counts, TF-slim
// names, initializer, drop path, one training step and a save/load round
// trip.
#include "models/pnasnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "models/model_factory.h"
#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

// TF-slim's ImageNet checkpoints for these networks have 1001 classes.
constexpr int64_t kClasses = 1001;
// Smallest side whose aux tap (1/16 of the input after conv0's VALID /2 and
// three stride-2 cells) is still 5x5: 67 -> 33 -> 17 -> 9 -> 5.
constexpr int64_t kMinSize = 67;

using testing::expect_logits;
using testing::tf_name;
using testing::tf_shapes;

std::shared_ptr<ClassifierImpl> make(const std::string& name, int64_t size = 0, double keep = 0.5,
                                     int64_t classes = kClasses) {
  return testing::create(name, classes, size, keep);
}

// TF-slim's variable names have no outer model scope; testing::tf_name()
// drops the '/' that tf_variable_name() puts before them.

struct Counts {
  int64_t all = 0, without_aux = 0;
};

Counts trainable(ClassifierImpl& m) {
  Counts c;
  for (const auto& v : model_variables(m)) {
    if (!v.trainable) continue;
    c.all += v.tensor.numel();
    if (tf_name(v.name).rfind("aux_", 0) != 0) c.without_aux += v.tensor.numel();
  }
  return c;
}

TEST(Pnasnet, Registered) {
  EXPECT_EQ(find_model("pnasnet_large").default_image_size, 331);
  EXPECT_EQ(find_model("pnasnet_mobile").default_image_size, 224);
  EXPECT_EQ(find_model("pnasnet_large").dropout_keep_prob, 0.5);
  EXPECT_EQ(find_model("pnasnet_mobile").dropout_keep_prob, 0.5);
}

// Trainable variables by hand, with F the cell's filters, P the channels of
// the reduced previous output, sep(K, c) = K*K*c + c*F (depthwise and
// pointwise) + K*K*F + F*F + 4F (two BatchNorms with beta and gamma):
//   prev: factorized C_prev*F + 2F (paths of F/2 and F/2 + F%2 channels),
//   prev_1x1 C_prev*F + 2F, or nothing in cell_stem_0, which has no
//   previous layer and takes its input as it is (P = C_in);
//   1x1 C_in*F + 2F; blocks sep(5,P) [+ P*F + 2F if the pool's P != F],
//   sep(7,F), sep(5,F) + sep(3,F), sep(3,F), sep(3,P) [+ F*F + 2F: the
//   strided "none" 1x1 of a stride-2 cell].
// pnasnet_large (F: stem 54, 108; cells 216 x4, 432 x4, 864 x4):
//   conv0 2,784; cell_stem_0 69,468; cell_stem_1 221,616;
//   cell_0..3 795,312 970,272 1,086,912 1,086,912;
//   cell_4..7 3,481,056 3,760,128 4,226,688 4,226,688;
//   cell_8..11 13,680,576 14,798,592 16,664,832 16,664,832;
//   final_layer/FC 4320*1001 + 1001 = 4,325,321
//   -> 86,061,989 (the published ~86.1M);
//   aux_7 (on 21x21 -> 6x6): 2160*128 + 256 + 6*6*128*768 + 1536 +
//   768*1001 + 1001 = 4,586,985 -> 90,648,974 in the training graph.
// TensorFlow's own pnasnet.py agrees: tests/tf_oracle/slim_models_once.py
// loads its checkpoint variable for variable (docs/design.md).
TEST(PnasnetLarge, ParameterCountAndNames) {
  auto m = make("pnasnet_large");
  const auto n = trainable(*m);
  EXPECT_EQ(n.without_aux, 86061989);
  EXPECT_EQ(n.all, 90648974);
  testing::expect_variables_from_table(*m, "pnasnet_large:1001");
  const auto shapes = tf_shapes(*m);
  EXPECT_EQ(shapes.count("cell_stem_0/prev_1x1/weights"), 0u);
  EXPECT_EQ(shapes.count("cell_12/1x1/weights"), 0u);
  // Normal cells keep the pools' inputs at F channels: no pool projection.
  EXPECT_EQ(shapes.count("cell_5/comb_iter_0/right/1x1/weights"), 0u);
  EXPECT_EQ(shapes.count("cell_5/comb_iter_4/right/1x1/weights"), 0u);
  for (const auto& [name, shape] : shapes) {  // Only the fcs have biases.
    if (name.find("biases") != std::string::npos)
      EXPECT_NE(name.find("FC/biases"), std::string::npos) << name;
  }
  // nasnet_large_arg_scope regularizes every conv, separable and fc weight.
  int64_t weights = 0;
  for (const auto& [name, shape] : shapes) {
    if (name.find("weights") != std::string::npos) ++weights;
  }
  EXPECT_EQ(m->regularized_weights().size(), static_cast<size_t>(weights));
}

// pnasnet_mobile (F: stem 13, 27; cells 54 x3, 108 x3, 216 x3). cell_stem_0
// works on conv0's 32 channels as they are, so its pool on them needs a 1x1
// to 13; cell_stem_1 reduces conv0's 32 channels to 27 in paths of 13 and
// 14 (factorized_reduction's int(F/2) and int(F/2) + F%2), so its pool needs
// none:
//   conv0 928; cell_stem_0 7,835; cell_stem_1 19,710;
//   cell_0..2 60,912 71,982 79,272; cell_3..5 240,408 257,688 286,848;
//   cell_6..8 900,720 970,272 1,086,912; final_layer/FC 1080*1001 + 1001
//   = 1,082,081 -> 5,065,568 (the published ~5.1M);
//   aux_5 (on 14x14 -> 4x4): 540*128 + 256 + 4*4*128*768 + 1536 +
//   768*1001 + 1001 = 2,413,545 -> 7,479,113 in the training graph.
TEST(PnasnetMobile, ParameterCountAndNames) {
  auto m = make("pnasnet_mobile");
  const auto n = trainable(*m);
  EXPECT_EQ(n.without_aux, 5065568);
  EXPECT_EQ(n.all, 7479113);
  testing::expect_variables_from_table(*m, "pnasnet_mobile:1001");
  const auto shapes = tf_shapes(*m);
  EXPECT_EQ(shapes.count("cell_9/1x1/weights"), 0u);
  EXPECT_EQ(shapes.count("cell_stem_0/prev_1x1/weights"), 0u);
  EXPECT_EQ(shapes.count("cell_stem_1/comb_iter_0/right/1x1/weights"), 0u);
}

TEST(PnasnetMobile, OutputShapesAndInitializer) {
  torch::manual_seed(0);
  auto m = make("pnasnet_mobile");
  torch::NoGradGuard no_grad;
  m->train();
  ASSERT_NO_FATAL_FAILURE(
      expect_logits(m->forward(torch::randn({2, 3, 224, 224})), 2, kClasses, /*aux=*/true));
  m->eval();
  // TF-slim: auxiliary logits in the training graph only.
  expect_logits(m->forward(torch::randn({1, 3, 224, 224})), 1, kClasses, /*aux=*/false);
  EXPECT_THROW(m->forward(torch::randn({1, 3, 225, 225})), c10::Error);

  // variance_scaling_initializer(mode='FAN_OUT'): truncated normal (2
  // sigma), sigma = sqrt(1.3 * 2 / fan_out); its std is 0.8796 sigma.
  std::map<std::string, torch::Tensor> vars;
  for (const auto& v : model_variables(*m)) vars[tf_name(v.name)] = v.tensor;
  testing::expect_truncated_normal(
      vars["cell_8/comb_iter_3/left/separable_3x3_2/pointwise_weights"], std::sqrt(1.3 * 2.0 / 216),
      "pointwise_weights");
  auto dw = vars["cell_8/comb_iter_3/left/separable_3x3_2/depthwise_weights"];
  EXPECT_LE(dw.abs().max().item<double>(), 2 * std::sqrt(1.3 * 2.0 / 9) + 1e-6);
  EXPECT_EQ(vars["final_layer/FC/biases"].abs().max().item<float>(), 0.0f);
  EXPECT_EQ(vars["cell_0/beginning_bn/gamma"].min().item<float>(), 1.0f);
}

TEST(PnasnetLarge, OutputShapeAtDefaultSize) {
  auto m = make("pnasnet_large");
  torch::NoGradGuard no_grad;
  m->eval();
  auto out = m->forward(torch::randn({1, 3, 331, 331}));
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, kClasses}));
}

// pnasnet_large has the same reductions; only pnasnet_mobile is built here
// (constructing the large net costs seconds).
TEST(Pnasnet, SmallestInput) {
  EXPECT_THROW(make("pnasnet_mobile", kMinSize - 1), c10::Error);
  auto m = make("pnasnet_mobile", kMinSize);
  m->train();
  auto out = m->forward(torch::randn({2, 3, kMinSize, kMinSize}));
  EXPECT_EQ(out.aux_logits.sizes(), (std::vector<int64_t>{2, kClasses}));
}

TEST(PnasnetLarge, DropPathOnlyInTraining) {
  torch::manual_seed(0);
  auto m = make("pnasnet_large", kMinSize, 1.0, 5);
  auto x = torch::randn({4, 3, kMinSize, kMinSize});
  torch::NoGradGuard no_grad;
  m->eval();
  EXPECT_TRUE(torch::equal(m->forward(x).logits, m->forward(x).logits));
  // Training: BatchNorm uses batch statistics either way, so only drop
  // path tells two forwards apart: off at step 0, on (keep 0.6 scaled per
  // cell) once the schedule has ramped up.
  m->train();
  EXPECT_TRUE(torch::equal(m->forward(x).logits, m->forward(x).logits));
  std::dynamic_pointer_cast<PnasnetImpl>(m)->set_global_step(250000);
  EXPECT_FALSE(torch::equal(m->forward(x).logits, m->forward(x).logits));
}

class PnasnetBoth : public ::testing::TestWithParam<const char*> {};

TEST_P(PnasnetBoth, OneTrainingStepLowersTheLoss) {
  torch::manual_seed(0);
  auto m = make(GetParam(), kMinSize, 1.0, 5);
  // Deterministic forwards: drop path is off at step 0 (and pnasnet_mobile
  // has none).
  std::dynamic_pointer_cast<PnasnetImpl>(m)->set_global_step(0);
  auto x = torch::randn({4, 3, kMinSize, kMinSize});
  auto y = torch::arange(4, torch::kInt64) % 5;
  testing::expect_first_order_step(*m, x, y, GetParam(), /*require_aux=*/true);
}

TEST_P(PnasnetBoth, SaveLoadRoundTrip) { testing::expect_round_trip(GetParam(), kMinSize); }

INSTANTIATE_TEST_SUITE_P(Variants, PnasnetBoth,
                         ::testing::Values("pnasnet_large", "pnasnet_mobile"));

}  // namespace
}  // namespace fastnn::models
