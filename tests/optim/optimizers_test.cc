// Each optimizer against values computed by hand from TF1's update rules
// (reference/fastnn.md §5.1), three steps, slot initial values included.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/optim/optimizers.h"

namespace fastnn::optim {
namespace {

// One scalar variable w, gradients fed by hand for three steps.
constexpr double kW0 = 1.0;
constexpr double kGrads[3] = {0.5, -0.25, 1.0};
constexpr double kLr = 0.1;

struct Fixture {
  torch::Tensor w = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  std::vector<Variable> vars() {
    return {{"w", w}};
  }
  void run(Optimizer& opt, std::vector<double>* after) {
    for (double g : kGrads) {
      w.mutable_grad() = torch::full({1}, g, torch::kFloat64);
      opt.step(kLr);
      after->push_back(w.item<double>());
    }
  }
};

TEST(Optimizers, GradientDescentThreeSteps) {
  Fixture f;
  GradientDescent opt(f.vars());
  std::vector<double> w;
  f.run(opt, &w);
  // w1 = 1 - 0.1*0.5 = 0.95; w2 = 0.95 + 0.025 = 0.975; w3 = 0.975 - 0.1
  EXPECT_DOUBLE_EQ(w[0], 0.95);
  EXPECT_DOUBLE_EQ(w[1], 0.975);
  EXPECT_DOUBLE_EQ(w[2], 0.875);
  EXPECT_TRUE(opt.slots().empty());
}

TEST(Optimizers, MomentumThreeSteps) {
  Fixture f;
  Momentum opt(f.vars(), 0.9);
  ASSERT_EQ(opt.slots().size(), 1u);
  EXPECT_EQ(opt.slots()[0].name, "w/Momentum");
  EXPECT_DOUBLE_EQ(opt.slots()[0].value.item<double>(), 0.0);
  std::vector<double> w;
  f.run(opt, &w);
  // a1 = 0.5          w1 = 1 - 0.05 = 0.95
  // a2 = 0.45 - 0.25 = 0.2    w2 = 0.95 - 0.02 = 0.93
  // a3 = 0.18 + 1 = 1.18      w3 = 0.93 - 0.118 = 0.812
  EXPECT_NEAR(w[0], 0.95, 1e-12);
  EXPECT_NEAR(w[1], 0.93, 1e-12);
  EXPECT_NEAR(w[2], 0.812, 1e-12);
  EXPECT_NEAR(opt.slots()[0].value.item<double>(), 1.18, 1e-12);
}

TEST(Optimizers, RMSPropThreeStepsSlotStartsAtOne) {
  Fixture f;
  const double decay = 0.9, momentum = 0.9, eps = 1.0;
  RMSProp opt(f.vars(), decay, momentum, eps);
  auto slots = opt.slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].name, "w/RMSProp");
  EXPECT_EQ(slots[1].name, "w/RMSProp_1");
  EXPECT_DOUBLE_EQ(slots[0].value.item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(slots[1].value.item<double>(), 0.0);
  std::vector<double> w;
  f.run(opt, &w);
  // Hand computation, epsilon inside the square root:
  double ms = 1.0, mom = 0.0, expect = kW0;
  std::vector<double> expected;
  for (double g : kGrads) {
    ms = decay * ms + (1 - decay) * g * g;
    mom = momentum * mom + kLr * g / std::sqrt(ms + eps);
    expect -= mom;
    expected.push_back(expect);
  }
  // Step 1 spelled out: ms = 0.9 + 0.025 = 0.925; mom = 0.05/sqrt(1.925).
  EXPECT_NEAR(expected[0], 1.0 - 0.05 / std::sqrt(1.925), 1e-15);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w[i], expected[i], 1e-12) << i;
}

TEST(Optimizers, VariablesWithoutGradientAreUntouched) {
  auto a = torch::ones({2}, torch::kFloat64).requires_grad_();
  auto b = torch::ones({2}, torch::kFloat64).requires_grad_();
  Momentum opt({{"a", a}, {"b", b}}, 0.9);
  a.mutable_grad() = torch::ones({2}, torch::kFloat64);
  opt.step(0.5);
  EXPECT_TRUE(torch::allclose(a, torch::full({2}, 0.5, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(b, torch::ones({2}, torch::kFloat64)));
}

TEST(Optimizers, FactoryUsesFastNNKeys) {
  HParams hp;
  hp.optimizer = "rmsprop";
  auto w = torch::zeros({1}).requires_grad_();
  auto opt = create_optimizer(hp, {{"w", w}});
  EXPECT_EQ(opt->name(), "RMSProp");
  hp.optimizer = "momentum";
  EXPECT_EQ(create_optimizer(hp, {{"w", w}})->name(), "Momentum");
  hp.optimizer = "sgd";
  EXPECT_EQ(create_optimizer(hp, {{"w", w}})->name(), "GradientDescent");
}

TEST(Optimizers, UnimplementedNameIsAConfigError) {
  HParams hp;
  hp.optimizer = "ftrl";
  auto w = torch::zeros({1}).requires_grad_();
  try {
    create_optimizer(hp, {{"w", w}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ftrl"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("rmsprop"), std::string::npos);
  }
}

}  // namespace
}  // namespace fastnn::optim
