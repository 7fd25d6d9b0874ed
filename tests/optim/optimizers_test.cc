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

TEST(Optimizers, UnknownNameIsAConfigError) {
  HParams hp;
  hp.optimizer = "adamw";
  auto w = torch::zeros({1}).requires_grad_();
  try {
    create_optimizer(hp, {{"w", w}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adamw"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("rmsprop"), std::string::npos);
  }
}

TEST(Optimizers, AdadeltaThreeSteps) {
  Fixture f;
  const double rho = 0.95, eps = 1.0;
  Adadelta opt(f.vars(), rho, eps);
  EXPECT_EQ(opt.slots()[0].name, "w/Adadelta");
  EXPECT_EQ(opt.slots()[1].name, "w/Adadelta_1");
  std::vector<double> w;
  f.run(opt, &w);
  double accum = 0, accum_update = 0, expect = kW0;
  for (int i = 0; i < 3; ++i) {
    const double g = kGrads[i];
    accum = rho * accum + (1 - rho) * g * g;
    const double upd = std::sqrt(accum_update + eps) / std::sqrt(accum + eps) * g;
    expect -= kLr * upd;
    accum_update = rho * accum_update + (1 - rho) * upd * upd;
    EXPECT_NEAR(w[i], expect, 1e-12) << i;
  }
  // Step 1 spelled out: accum = 0.0125, upd = 0.5 / sqrt(1.0125).
  EXPECT_NEAR(w[0], 1.0 - 0.1 * 0.5 / std::sqrt(1.0125), 1e-15);
}

TEST(Optimizers, AdagradThreeStepsAccumulatorStartsAtInitialValue) {
  Fixture f;
  Adagrad opt(f.vars(), 0.1);
  EXPECT_EQ(opt.slots()[0].name, "w/Adagrad");
  EXPECT_DOUBLE_EQ(opt.slots()[0].value.item<double>(), 0.1);
  std::vector<double> w;
  f.run(opt, &w);
  // accum: 0.35, 0.4125, 1.4125.
  EXPECT_NEAR(w[0], 1.0 - 0.1 * 0.5 / std::sqrt(0.35), 1e-12);
  EXPECT_NEAR(w[1], w[0] + 0.1 * 0.25 / std::sqrt(0.4125), 1e-12);
  EXPECT_NEAR(w[2], w[1] - 0.1 * 1.0 / std::sqrt(1.4125), 1e-12);
}

TEST(Optimizers, AdamThreeStepsEpsilonOutsideBiasCorrection) {
  Fixture f;
  const double b1 = 0.9, b2 = 0.999, eps = 1.0;  // FastNN's opt_epsilon
  Adam opt(f.vars(), b1, b2, eps);
  std::vector<double> w;
  f.run(opt, &w);
  double m = 0, v = 0, b1p = b1, b2p = b2, expect = kW0;
  for (int i = 0; i < 3; ++i) {
    const double g = kGrads[i];
    const double lr_t = kLr * std::sqrt(1 - b2p) / (1 - b1p);
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    expect -= lr_t * m / (std::sqrt(v) + eps);
    b1p *= b1;
    b2p *= b2;
    EXPECT_NEAR(w[i], expect, 1e-12) << i;
  }
  // Step 1: lr_t = 0.1*sqrt(0.001)/0.1, m = 0.05, v = 0.00025.
  EXPECT_NEAR(w[0], 1.0 - std::sqrt(0.001) * 0.05 / (std::sqrt(0.00025) + 1.0),
              1e-15);
  auto slots = opt.slots();
  EXPECT_EQ(slots[0].name, "w/Adam");
  EXPECT_EQ(slots[1].name, "w/Adam_1");
  EXPECT_EQ(slots[2].name, "beta1_power");
  EXPECT_NEAR(slots[2].value.item<double>(), std::pow(0.9, 4), 1e-15);
}

TEST(Optimizers, FtrlThreeStepsFollowsTheKernel) {
  Fixture f;
  const double p = -0.5, init = 0.1, l1 = 0.01, l2 = 0.02;
  Ftrl opt(f.vars(), p, init, l1, l2);
  EXPECT_EQ(opt.slots()[0].name, "w/Ftrl");
  EXPECT_EQ(opt.slots()[1].name, "w/Ftrl_1");
  std::vector<double> w;
  f.run(opt, &w);
  double accum = init, linear = 0, var = kW0;
  for (int i = 0; i < 3; ++i) {
    const double g = kGrads[i];
    const double accum_new = accum + g * g;
    linear += g - (std::sqrt(accum_new) - std::sqrt(accum)) / kLr * var;
    const double quadratic = std::sqrt(accum_new) / kLr + 2 * l2;
    var = std::abs(linear) > l1 ? ((linear > 0 ? l1 : -l1) - linear) / quadratic : 0.0;
    accum = accum_new;
    EXPECT_NEAR(w[i], var, 1e-12) << i;
  }
  // Step 1 spelled out: accum_new = 0.35;
  // linear = 0.5 - (sqrt(0.35) - sqrt(0.1)) / 0.1 * 1.
  const double lin1 = 0.5 - (std::sqrt(0.35) - std::sqrt(0.1)) / 0.1;
  EXPECT_NEAR(w[0], ((lin1 > 0 ? l1 : -l1) - lin1) / (std::sqrt(0.35) / 0.1 + 0.04),
              1e-12);
}

TEST(Optimizers, AdamWeightDecayNoBiasCorrectionAndExcludedNames) {
  auto w = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  auto b = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  const double b1 = 0.9, b2 = 0.999, eps = 1e-6;
  AdamWeightDecay opt({{"dense/kernel", w}, {"dense/bias", b}}, b1, b2, eps);
  double m = 0, v = 0, ew = kW0, eb = kW0;
  for (double g : kGrads) {
    w.mutable_grad() = torch::full({1}, g, torch::kFloat64);
    b.mutable_grad() = torch::full({1}, g, torch::kFloat64);
    opt.step(kLr);
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    ew -= kLr * (m / (std::sqrt(v) + eps) + 0.01 * ew);
    eb -= kLr * (m / (std::sqrt(v) + eps));
    EXPECT_NEAR(w.item<double>(), ew, 1e-12);
    EXPECT_NEAR(b.item<double>(), eb, 1e-12);
  }
  EXPECT_EQ(opt.slots()[0].name, "dense/kernel/adam_m");
  EXPECT_EQ(opt.slots()[3].name, "dense/bias/adam_v");
}

TEST(Optimizers, FactoryBuildsAllEightWithFastNNKeys) {
  HParams hp;
  auto w = torch::zeros({1}).requires_grad_();
  const std::map<std::string, std::string> expected = {
      {"adadelta", "Adadelta"}, {"adagrad", "Adagrad"}, {"adam", "Adam"},
      {"ftrl", "Ftrl"}, {"momentum", "Momentum"}, {"rmsprop", "RMSProp"},
      {"sgd", "GradientDescent"}, {"adamweightdecay", "AdamWeightDecay"}};
  for (const auto& name : optimizer_names()) {
    hp.optimizer = name;
    EXPECT_EQ(create_optimizer(hp, {{"w", w}})->name(), expected.at(name));
  }
  EXPECT_EQ(optimizer_names().size(), 8u);
}

}  // namespace
}  // namespace fastnn::optim
