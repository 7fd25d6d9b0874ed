// nasnet_cifar, nasnet_mobile, nasnet_large: shapes, parameter counts,
// TF-slim names, drop path, one training step and a save/load round trip.
#include "models/nasnet.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "models/model_factory.h"
#include "tests/models/net_checks.h"

namespace fastnn::models {
namespace {

using testing::expect_logits;
using testing::expect_variables_from_table;
using testing::tf_shapes;

// Dropout off (keep 1.0) unless the test says otherwise.
std::shared_ptr<ClassifierImpl> make(const std::string& name, int64_t classes, int64_t size = 0) {
  return testing::create(name, classes, size, /*keep=*/1.0);
}

int64_t count(ClassifierImpl& m, const std::string& skip = "") {
  int64_t n = 0;
  for (const auto& p : m.named_parameters()) {
    if (skip.empty() || p.key().rfind(skip, 0) != 0) n += p.value().numel();
  }
  return n;
}

// TF-slim opens no outer scope for NASNet; testing::tf_name() drops the '/'
// that tf_variable_name() puts before the names.

// Trainable parameters, derived by hand and tallied by a short script that
// walks the cell definitions (nasnet_utils' operations and
// hiddenstate_indices): per conv k*k*in*out, per separable conv
// k*k*in + in*out, per batch norm 2*channels (beta, gamma), fc in*out +
// out. A separable_KxK_2 op from c to F channels is
// (k*k*c + c*F + 2F) + (k*k*F + F*F + 2F); a cell adds its 1x1 + bn
// (in*F + 2F), prev_1x1 (c*F + 2F) or a stride-2 factorized reduction
// (2 * c*F/2 + 2F), and cell_output reductions likewise. Stem: 3*3*3*c +
// 2c. Aux head: c*128 + 256 + k*k*128*768 + 1536 + 768*classes + classes.
// Cross-check: without the aux head and with 1000 classes the ImageNet
// variants give 5,289,978 (mobile) and 88,753,150 (large), the trainable
// counts Keras reports for its port of these checkpoints (NASNetMobile
// 5,326,716 total / NASNetLarge 88,949,818 total, i.e. the published
// ~5.3M and ~88.9M with moving statistics).
constexpr int64_t kCifarParams = 3346538;      // 10 classes, final 768
constexpr int64_t kCifarAuxParams = 1631498;   // 384 -> 128, 4x4 conv
constexpr int64_t kMobileParams = 5291035;     // 1001 classes, final 1056
constexpr int64_t kMobileAuxParams = 2412009;  // 352 -> 128, 4x4 conv
constexpr int64_t kLargeParams = 88757183;     // 1001 classes, final 4032
constexpr int64_t kLargeAuxParams = 4568553;   // 2016 -> 128, 6x6 conv

TEST(NasNet, Registered) {
  EXPECT_EQ(find_model("nasnet_cifar").default_image_size, 32);
  EXPECT_EQ(find_model("nasnet_mobile").default_image_size, 224);
  EXPECT_EQ(find_model("nasnet_large").default_image_size, 331);
  // dense_dropout_keep_prob of cifar_config / *_imagenet_config.
  EXPECT_EQ(find_model("nasnet_cifar").dropout_keep_prob, 1.0);
  EXPECT_EQ(find_model("nasnet_mobile").dropout_keep_prob, 0.5);
  EXPECT_EQ(find_model("nasnet_large").dropout_keep_prob, 0.5);
}

TEST(NasNet, CifarShapesNamesAndCount) {
  torch::manual_seed(0);
  auto m = make("nasnet_cifar", 10);
  auto x = torch::randn({2, 3, 32, 32});
  m->train();
  ASSERT_NO_FATAL_FAILURE(expect_logits(m->forward(x), 2, 10, /*aux=*/true));
  m->eval();
  torch::NoGradGuard no_grad;
  expect_logits(m->forward(x), 2, 10, /*aux=*/false);  // aux head only in training
  EXPECT_THROW(m->forward(torch::randn({1, 3, 33, 33})), c10::Error);

  expect_variables_from_table(*m, "nasnet_cifar:10");
  const auto shapes = tf_shapes(*m);
  EXPECT_EQ(shapes.count("cell_17/1x1/weights"), 1u);
  EXPECT_EQ(shapes.count("cell_18/1x1/weights"), 0u);
  EXPECT_EQ(shapes.count("reduction_cell_2/1x1/weights"), 0u);
  for (const auto& [name, shape] : shapes) {
    const bool bias = name.size() > 7 && name.substr(name.size() - 7) == "/biases";
    if (bias) EXPECT_NE(name.find("/FC/"), std::string::npos) << name;
  }
  // Every conv/separable/fc weight is regularized; biases and BN are not.
  int64_t weights = 0;
  for (const auto& p : m->parameters()) weights += p.dim() >= 2;
  EXPECT_EQ(m->regularized_weights().size(), static_cast<size_t>(weights));
  // Paper: NASNet-A (6 @ 768) on CIFAR-10 has 3.3M parameters (no aux).
  EXPECT_EQ(count(*m, "aux_"), kCifarParams);
  EXPECT_EQ(count(*m) - count(*m, "aux_"), kCifarAuxParams);
}

TEST(NasNet, MobileShapesNamesAndCount) {
  torch::manual_seed(0);
  // TF-slim's ImageNet checkpoints have 1001 classes.
  auto m = make("nasnet_mobile", 1001);
  auto x = torch::randn({2, 3, 224, 224});
  m->train();
  ASSERT_NO_FATAL_FAILURE(expect_logits(m->forward(x), 2, 1001, /*aux=*/true));
  m->eval();
  {
    torch::NoGradGuard no_grad;
    EXPECT_EQ(m->forward(x.slice(0, 0, 1)).logits.sizes(), (std::vector<int64_t>{1, 1001}));
  }
  expect_variables_from_table(*m, "nasnet_mobile:1001");
  EXPECT_EQ(tf_shapes(*m).count("cell_11/1x1/weights"), 1u);
  EXPECT_EQ(tf_shapes(*m).count("cell_12/1x1/weights"), 0u);
  EXPECT_EQ(count(*m, "aux_"), kMobileParams);
  EXPECT_EQ(count(*m) - count(*m, "aux_"), kMobileAuxParams);
  // Moving mean and variance: Keras' 36,738 non-trainable for the net
  // without aux, plus aux_bn0 and aux_bn1 (2 * (128 + 768)).
  int64_t stats = 0;
  for (const auto& b : m->buffers()) stats += b.numel();
  EXPECT_EQ(stats, 36738 + 1792);
}

TEST(NasNet, LargeShapesNamesAndCount) {
  torch::manual_seed(0);
  auto m = make("nasnet_large", 1001);
  m->eval();
  {
    torch::NoGradGuard no_grad;
    auto out = m->forward(torch::randn({1, 3, 331, 331}));
    EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, 1001}));
  }
  expect_variables_from_table(*m, "nasnet_large:1001");
  EXPECT_EQ(count(*m, "aux_"), kLargeParams);
  EXPECT_EQ(count(*m) - count(*m, "aux_"), kLargeAuxParams);
  // Moving statistics: Keras' 196,668 plus the aux head's 1792.
  int64_t stats = 0;
  for (const auto& b : m->buffers()) stats += b.numel();
  EXPECT_EQ(stats, 196668 + 1792);
}

TEST(NasNet, DropPathOnlyInTrainingAndAfterWarmUp) {
  torch::manual_seed(0);
  auto m = make("nasnet_cifar", 10, 16);
  auto* net = dynamic_cast<NasNetImpl*>(m.get());
  ASSERT_NE(net, nullptr);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({8, 3, 16, 16});
  m->train();
  // Step 0: keep probability 1 everywhere; training BN is deterministic.
  EXPECT_TRUE(torch::equal(m->forward(x).logits, m->forward(x).logits));
  net->set_global_step(937500);  // total_training_steps: full drop path
  EXPECT_FALSE(torch::equal(m->forward(x).logits, m->forward(x).logits));
  m->eval();
  EXPECT_TRUE(torch::equal(m->forward(x).logits, m->forward(x).logits));
}

// One SGD step (logits + 0.4 * aux, dropout off, BN in training mode, in
// float64) sized to lower the loss by 1% to first order, as in
// inception_v4_test.
void expect_training_step_lowers_loss(const std::string& name, int64_t size) {
  torch::manual_seed(0);
  auto m = make(name, 5, size);
  m->to(torch::kFloat64);
  auto x = torch::randn({4, 3, size, size}, torch::kFloat64);
  auto y = torch::arange(4, torch::kInt64) % 5;
  testing::expect_first_order_step(*m, x, y, name, /*require_aux=*/true);
}

// Smallest ImageNet input: the aux cell's map must hold the 5x5 pool:
// 67 -> 33 (conv0) -> 17 -> 9 (stem cells) -> 5 (reduction_cell_0).
constexpr int64_t kMinImagenetSize = 67;

TEST(NasNet, SmallestImagenetInput) {
  EXPECT_THROW(make("nasnet_mobile", 5, kMinImagenetSize - 2), c10::Error);
  auto m = make("nasnet_mobile", 5, kMinImagenetSize);
  m->train();
  auto out = m->forward(torch::randn({2, 3, kMinImagenetSize, kMinImagenetSize}));
  EXPECT_EQ(out.aux_logits.sizes(), (std::vector<int64_t>{2, 5}));
}

TEST(NasNet, CifarTrainingStepAndRoundTrip) {
  expect_training_step_lowers_loss("nasnet_cifar", 16);
  testing::expect_round_trip("nasnet_cifar", 16);
}

TEST(NasNet, MobileTrainingStepAndRoundTrip) {
  expect_training_step_lowers_loss("nasnet_mobile", kMinImagenetSize);
  testing::expect_round_trip("nasnet_mobile", kMinImagenetSize);
}

TEST(NasNet, LargeTrainingStepAndRoundTrip) {
  expect_training_step_lowers_loss("nasnet_large", kMinImagenetSize);
  testing::expect_round_trip("nasnet_large", kMinImagenetSize);
}

}  // namespace
}  // namespace fastnn::models
