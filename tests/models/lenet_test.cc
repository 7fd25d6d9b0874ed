// lenet: shape, parameter count, TF-slim names, initializer, one training
// step, and a save/load round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "src/optim/optimizers.h"

namespace fastnn::models {
namespace {

std::shared_ptr<ClassifierImpl> make_lenet(int64_t classes = 10, int64_t ch = 1) {
  ModelOptions o;
  o.num_classes = classes;
  o.in_channels = ch;
  return find_model("lenet").create(o);
}

TEST(LeNet, OutputShape) {
  auto m = make_lenet(10, 1);
  auto out = m->forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{4, 10}));
  EXPECT_FALSE(out.aux_logits.defined());
  auto rgb = make_lenet(7, 3)->forward(torch::randn({2, 3, 28, 28}));
  EXPECT_EQ(rgb.logits.sizes(), (std::vector<int64_t>{2, 7}));
}

TEST(LeNet, ParameterCountMatchesTFSlim) {
  auto m = make_lenet(10, 1);
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  // conv1 5*5*1*32+32, conv2 5*5*32*64+64, fc3 7*7*64*1024+1024, fc4 1024*10+10
  EXPECT_EQ(n, 832 + 51264 + 3212288 + 10250);
}

TEST(LeNet, TFSlimVariableNames) {
  auto m = make_lenet();
  std::vector<std::string> names;
  for (const auto& v : model_variables(*m)) names.push_back(v.name);
  std::vector<std::string> expected = {
      "LeNet/conv1/weights", "LeNet/conv1/biases", "LeNet/conv2/weights", "LeNet/conv2/biases",
      "LeNet/fc3/weights",   "LeNet/fc3/biases",   "LeNet/fc4/weights",   "LeNet/fc4/biases"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(m->regularized_weights().size(), 4u);
}

TEST(LeNet, TruncatedNormalInit) {
  torch::manual_seed(1);
  auto m = make_lenet();
  for (const auto& v : model_variables(*m)) {
    if (v.name.find("biases") != std::string::npos) {
      EXPECT_EQ(v.tensor.abs().max().item<float>(), 0.0f) << v.name;
    } else {
      EXPECT_LE(v.tensor.abs().max().item<float>(), 0.2f + 1e-6) << v.name;
      if (v.tensor.numel() > 10000) {
        // Truncated N(0, 0.1) at 2 sigma has std 0.1 * 0.8796.
        EXPECT_NEAR(v.tensor.std().item<float>(), 0.088, 0.004) << v.name;
      }
    }
  }
}

TEST(LeNet, OneTrainingStepLowersTheLoss) {
  torch::manual_seed(0);
  ModelOptions o;
  o.num_classes = 10;
  o.in_channels = 1;
  o.dropout_keep_prob = 1.0;
  auto m = find_model("lenet").create(o);
  std::vector<optim::Variable> vars;
  for (const auto& v : model_variables(*m)) vars.push_back({v.name, v.tensor});
  optim::GradientDescent opt(vars);
  auto x = torch::randn({8, 1, 28, 28});
  auto y = torch::randint(0, 10, {8}, torch::kInt64);
  auto loss0 = torch::nn::functional::cross_entropy(m->forward(x).logits, y);
  m->zero_grad(/*set_to_none=*/false);
  loss0.backward();
  opt.step(1e-4);
  auto loss1 = torch::nn::functional::cross_entropy(m->forward(x).logits, y);
  EXPECT_LT(loss1.item<double>(), loss0.item<double>());
}

TEST(LeNet, SaveLoadRoundTrip) {
  auto a = make_lenet();
  auto b = make_lenet();
  auto va = model_variables(*a), vb = model_variables(*b);
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < va.size(); ++i) vb[i].tensor.copy_(va[i].tensor);
  }
  a->eval();
  b->eval();
  auto x = torch::randn({3, 1, 28, 28});
  EXPECT_TRUE(torch::equal(a->forward(x).logits, b->forward(x).logits));
}

TEST(ModelFactory, StatisticsTableFollowsTFSlim) {
  auto m = make_lenet();
  const std::string t = model_statistics_table(*m);
  EXPECT_NE(t.find("LeNet/conv1/weights:0 (float32_ref 5x5x1x32) [800, bytes: 3200]"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("LeNet/fc3/weights:0 (float32_ref 3136x1024) [3211264"), std::string::npos) << t;
  EXPECT_NE(t.find("Total size of variables: 3274634"), std::string::npos) << t;
}

TEST(ModelFactory, UnknownNameListsValidOnes) {
  try {
    find_model("lenet5");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("lenet"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn::models
