// Each optimizer against values computed by hand from TF1's update rules
// (TF1's training_ops kernels), three steps, slot initial values included.
#include "src/optim/optimizers.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/compat/torch_compat.h"
#include "src/config/value_parse.h"
#include "src/train/builder.h"
#include "tests/test_paths.h"

namespace fastnn::optim {
namespace {

// One scalar variable w, gradients fed by hand for three steps.
constexpr double kW0 = 1.0;
constexpr double kGrads[3] = {0.5, -0.25, 1.0};
constexpr double kLr = 0.1;

struct Fixture {
  torch::Tensor w = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  std::vector<Variable> vars() { return {{"w", w}}; }
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
  MomentumOptions o;
  o.momentum = 0.9;
  Momentum opt(f.vars(), o);
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

// The optimizer's slots on the fixture's one-element variable, in order:
// {name, starting value}.
void expect_slots(Optimizer& opt, const std::vector<std::pair<std::string, double>>& want) {
  const auto slots = opt.slots();
  ASSERT_EQ(slots.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(slots[i].name, want[i].first);
    EXPECT_DOUBLE_EQ(slots[i].value.item<double>(), want[i].second) << want[i].first;
  }
}

TEST(Optimizers, RMSPropThreeStepsSlotStartsAtOne) {
  Fixture f;
  const double decay = 0.9, momentum = 0.9, eps = 1.0;
  RMSProp opt(f.vars(), RMSPropOptions{decay, momentum, eps});
  expect_slots(opt, {{"w/RMSProp", 1.0}, {"w/RMSProp_1", 0.0}});
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
  MomentumOptions o;
  o.momentum = 0.9;
  Momentum opt({{"a", a}, {"b", b}}, o);
  a.mutable_grad() = torch::ones({2}, torch::kFloat64);
  opt.step(0.5);
  EXPECT_TRUE(torch::allclose(a, torch::full({2}, 0.5, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(b, torch::ones({2}, torch::kFloat64)));
}

TEST(Optimizers, FactoryUsesFastNNKeys) {
  HParams hp;
  hp.optimizer = "rmsprop";
  auto w = torch::zeros({1}).requires_grad_();
  auto opt = create_optimizer(train::optimizer_options(hp), {{"w", w}});
  EXPECT_EQ(opt->name(), "RMSProp");
  hp.optimizer = "momentum";
  EXPECT_EQ(create_optimizer(train::optimizer_options(hp), {{"w", w}})->name(), "Momentum");
  hp.optimizer = "sgd";
  EXPECT_EQ(create_optimizer(train::optimizer_options(hp), {{"w", w}})->name(), "GradientDescent");
}

TEST(Optimizers, UnknownNameIsAConfigError) {
  HParams hp;
  hp.optimizer = "adamw";
  auto w = torch::zeros({1}).requires_grad_();
  try {
    create_optimizer(train::optimizer_options(hp), {{"w", w}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adamw"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("rmsprop"), std::string::npos);
  }
}

TEST(Optimizers, AdadeltaThreeSteps) {
  Fixture f;
  const double rho = 0.95, eps = 1.0;
  AdadeltaOptions o;
  o.rho = rho;
  o.epsilon = eps;
  Adadelta opt(f.vars(), o);
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
  AdagradOptions o;
  o.initial_accumulator_value = 0.1;
  Adagrad opt(f.vars(), o);
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
  AdamOptions o;
  o.beta1 = b1;
  o.beta2 = b2;
  o.epsilon = eps;
  Adam opt(f.vars(), o);
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
  EXPECT_NEAR(w[0], 1.0 - std::sqrt(0.001) * 0.05 / (std::sqrt(0.00025) + 1.0), 1e-15);
  auto slots = opt.slots();
  EXPECT_EQ(slots[0].name, "w/Adam");
  EXPECT_EQ(slots[1].name, "w/Adam_1");
  EXPECT_EQ(slots[2].name, "beta1_power");
  EXPECT_NEAR(slots[2].value.item<double>(), std::pow(0.9, 4), 1e-15);
}

TEST(Optimizers, FtrlThreeStepsFollowsTheKernel) {
  Fixture f;
  const double p = -0.5, init = 0.1, l1 = 0.01, l2 = 0.02;
  FtrlOptions o;
  o.learning_rate_power = p;
  o.initial_accumulator_value = init;
  o.l1 = l1;
  o.l2 = l2;
  Ftrl opt(f.vars(), o);
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
  EXPECT_NEAR(w[0], ((lin1 > 0 ? l1 : -l1) - lin1) / (std::sqrt(0.35) / 0.1 + 0.04), 1e-12);
}

TEST(Optimizers, AdamWeightDecayNoBiasCorrectionAndExcludedNames) {
  auto w = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  auto b = torch::full({1}, kW0, torch::kFloat64).requires_grad_();
  const double b1 = 0.9, b2 = 0.999, eps = 1e-6;
  AdamWeightDecayOptions o;
  o.beta1 = b1;
  o.beta2 = b2;
  o.epsilon = eps;
  AdamWeightDecay opt({{"dense/kernel", w}, {"dense/bias", b}}, o);
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

// Every row of the table: the TF1 name, the variables handed over, one step
// that moves w. A new row needs a line in `expected`.
TEST(Optimizers, FactoryBuildsAllEightWithFastNNKeys) {
  HParams hp;
  auto w = torch::zeros({1}).requires_grad_();
  const std::map<std::string, std::string> expected = {
      {"adadelta", "Adadelta"},   {"adagrad", "Adagrad"},
      {"adam", "Adam"},           {"ftrl", "Ftrl"},
      {"momentum", "Momentum"},   {"rmsprop", "RMSProp"},
      {"sgd", "GradientDescent"}, {"adamweightdecay", "AdamWeightDecay"}};
  for (const auto& name : optimizer_names()) {
    hp.optimizer = name;
    EXPECT_EQ(create_optimizer(train::optimizer_options(hp), {{"w", w}})->name(),
              expected.at(name));
  }
  EXPECT_EQ(optimizer_names().size(), 8u);
  const auto names = optimizer_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size())
      << "a name appears twice in the optimizer table";
  EXPECT_EQ(expected.size(), names.size());
  for (const auto& name : names) {
    hp.optimizer = name;
    auto v = torch::full({2}, kW0, torch::kFloat64).requires_grad_();
    auto opt = create_optimizer(train::optimizer_options(hp), {{"v", v}});
    ASSERT_EQ(opt->variables().size(), 1u) << name;
    EXPECT_EQ(opt->variables()[0].name, "v");
    v.mutable_grad() = torch::full({2}, 0.5, torch::kFloat64);
    opt->step(kLr);
    EXPECT_FALSE(torch::equal(v, torch::full({2}, kW0, torch::kFloat64))) << name;
    EXPECT_TRUE(torch::isfinite(v).all().item<bool>()) << name;
  }
}

TEST(Optimizers, UnknownNameListsEveryValidNameAndWhereItWasSet) {
  HParams hp;
  hp.optimizer = "adamw";
  hp.sources["optimizer"] = "flowers.cfg:3";
  auto w = torch::zeros({1}).requires_grad_();
  try {
    create_optimizer(train::optimizer_options(hp), {{"w", w}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what,
              "flowers.cfg:3: optimizer: 'adamw' is not valid; valid values: "
              "adadelta, adagrad, adam, ftrl, momentum, rmsprop, sgd, "
              "adamweightdecay");
    for (const auto& name : optimizer_names()) {
      EXPECT_NE(what.find(name), std::string::npos) << name;
    }
  }
}

// The config loader leaves the name to the factory (the one list), which then
// names the file and line, as the loader does for other keys.
TEST(Optimizers, UnknownNameFromAFileIsReportedWithFileAndLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "optim";
  fs::create_directories(dir);
  const std::string path = (dir / "flowers.cfg").string();
  {
    std::ofstream out(path);
    out << "batch_size=8\noptimizer=adamw\n";
  }
  const char* argv[] = {"train_image_classifier", "--config", path.c_str()};
  LoadResult r;
  ASSERT_NO_THROW(r = load_hparams(3, argv));
  EXPECT_EQ(r.hp.optimizer, "adamw");
  try {
    create_optimizer(train::optimizer_options(r.hp), {});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: optimizer: 'adamw' is not valid; valid values: " +
                                         join_list(optimizer_names()));
  }
  const char* cli[] = {"train_image_classifier", "--optimizer=Adam"};
  ASSERT_NO_THROW(r = load_hparams(2, cli));
  try {
    create_optimizer(train::optimizer_options(r.hp), {});
    FAIL() << "expected ConfigError (names are case-sensitive)";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("command line: optimizer: 'Adam'", 0), 0u) << e.what();
  }
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Variable>)>;

// An optimizer of type Opt built by hand with `options`.
template <class Opt, class Options>
MakeOptimizer made_as(Options options) {
  return [options](std::vector<Variable> vars) {
    return std::unique_ptr<Optimizer>(new Opt(std::move(vars), options));
  };
}

// Each row hands FastNN's keys to the right option fields: three steps
// through the factory equal three steps of the optimizer built by hand.
TEST(Optimizers, FactoryMapsFastNNKeysOntoOptions) {
  HParams hp;
  hp.opt_epsilon = 0.5;
  hp.adadelta_rho = 0.8;
  hp.adagrad_initial_accumulator_value = 0.3;
  hp.adam_beta1 = 0.7;
  hp.adam_beta2 = 0.95;
  hp.ftrl_learning_rate_power = -0.25;
  hp.ftrl_initial_accumulator_value = 0.2;
  hp.ftrl_l1 = 0.01;
  hp.ftrl_l2 = 0.02;
  hp.momentum = 0.5;
  hp.rmsprop_momentum = 0.6;
  hp.rmsprop_decay = 0.7;
  // Aggregate initialization in the structs' field order (optimizers.h).
  const std::map<std::string, MakeOptimizer> by_hand = {
      {"adadelta", made_as<Adadelta>(AdadeltaOptions{/*rho=*/0.8, /*epsilon=*/0.5})},
      {"adagrad", made_as<Adagrad>(AdagradOptions{/*initial_accumulator_value=*/0.3})},
      {"adam", made_as<Adam>(AdamOptions{/*beta1=*/0.7, /*beta2=*/0.95, /*epsilon=*/0.5})},
      {"ftrl", made_as<Ftrl>(FtrlOptions{/*learning_rate_power=*/-0.25,
                                         /*initial_accumulator_value=*/0.2, /*l1=*/0.01,
                                         /*l2=*/0.02})},
      {"momentum", made_as<Momentum>(MomentumOptions{/*momentum=*/0.5})},
      {"rmsprop",
       made_as<RMSProp>(RMSPropOptions{/*decay=*/0.7, /*momentum=*/0.6, /*epsilon=*/0.5})},
      {"sgd",
       [](std::vector<Variable> v) {
         return std::unique_ptr<Optimizer>(new GradientDescent(std::move(v)));
       }},
      {"adamweightdecay", made_as<AdamWeightDecay>(AdamWeightDecayOptions{
                              /*beta1=*/0.7, /*beta2=*/0.95, /*epsilon=*/0.5})},
  };
  for (const auto& name : optimizer_names()) {
    ASSERT_EQ(by_hand.count(name), 1u) << name;
    hp.optimizer = name;
    Fixture a, b;
    auto made = create_optimizer(train::optimizer_options(hp), a.vars());
    auto expected = by_hand.at(name)(b.vars());
    std::vector<double> wa, wb;
    a.run(*made, &wa);
    b.run(*expected, &wb);
    for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(wa[i], wb[i]) << name << i;
    auto sa = made->slots(), sb = expected->slots();
    ASSERT_EQ(sa.size(), sb.size()) << name;
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].name, sb[i].name) << name;
      EXPECT_TRUE(torch::equal(sa[i].value, sb[i].value)) << sa[i].name;
    }
  }
}

// The option structs' defaults are TensorFlow 1's (FastNN's keys differ).
TEST(Optimizers, OptionDefaultsAreTF1s) {
  EXPECT_EQ(MomentumOptions().momentum, 0.9);
  const RMSPropOptions rms;
  EXPECT_EQ(rms.decay, 0.9);
  EXPECT_EQ(rms.momentum, 0.0);
  EXPECT_EQ(rms.epsilon, 1e-10);
  EXPECT_FALSE(rms.centered);
  EXPECT_EQ(AdadeltaOptions().rho, 0.95);
  EXPECT_EQ(AdadeltaOptions().epsilon, 1e-8);
  EXPECT_EQ(AdagradOptions().initial_accumulator_value, 0.1);
  EXPECT_EQ(AdamOptions().beta1, 0.9);
  EXPECT_EQ(AdamOptions().beta2, 0.999);
  EXPECT_EQ(AdamOptions().epsilon, 1e-8);
  const FtrlOptions ftrl;
  EXPECT_EQ(ftrl.learning_rate_power, -0.5);
  EXPECT_EQ(ftrl.initial_accumulator_value, 0.1);
  EXPECT_EQ(ftrl.l1, 0.0);
  EXPECT_EQ(ftrl.l2, 0.0);
  EXPECT_EQ(AdamWeightDecayOptions().epsilon, 1e-6);
  EXPECT_EQ(AdamWeightDecayOptions().weight_decay_rate, 0.01);
}

TEST(Optimizers, RMSPropCenteredThreeSteps) {
  Fixture f;
  const double decay = 0.9, momentum = 0.9, eps = 1.0;
  RMSProp opt(f.vars(), RMSPropOptions{decay, momentum, eps, /*centered=*/true});
  // TF1's slot order and uniquified names: rms, mg, momentum.
  expect_slots(opt, {{"w/RMSProp", 1.0}, {"w/RMSProp_1", 0.0}, {"w/RMSProp_2", 0.0}});
  std::vector<double> w;
  f.run(opt, &w);
  double ms = 1.0, mg = 0.0, mom = 0.0, expect = kW0;
  for (int i = 0; i < 3; ++i) {
    const double g = kGrads[i];
    ms = decay * ms + (1 - decay) * g * g;
    mg = decay * mg + (1 - decay) * g;
    mom = momentum * mom + kLr * g / std::sqrt(ms - mg * mg + eps);
    expect -= mom;
    EXPECT_NEAR(w[i], expect, 1e-12) << i;
  }
  // Step 1 spelled out: ms = 0.925, mg = 0.05, denominator sqrt(1.9225).
  EXPECT_NEAR(w[0], 1.0 - 0.05 / std::sqrt(1.9225), 1e-15);
  EXPECT_NEAR(opt.slots()[1].value.item<double>(), mg, 1e-15);
}

TEST(Optimizers, DocsListEveryOptimizerName) {
  const std::string md = format_optimizers_markdown();
  for (const auto& name : optimizer_names()) {
    EXPECT_NE(md.find("| `" + name + "` |"), std::string::npos) << name;
  }
  std::ifstream in(std::string(FASTNN_SOURCE_DIR) + "/docs/hyperparameters.md");
  ASSERT_TRUE(in) << "docs/hyperparameters.md is missing";
  std::stringstream docs;
  docs << in.rdbuf();
  EXPECT_NE(docs.str().find(md), std::string::npos)
      << "docs/hyperparameters.md's optimizer names are out of date: run "
         "scripts/update_hparams_doc.sh";
}

}  // namespace
}  // namespace fastnn::optim

namespace fastnn::optim {
namespace {

// Three float32 variables (one a "bias", which adamweightdecay leaves
// undecayed), 20 steps of the same random gradients; the third variable has
// none from step 5 on (left alone by both paths).
std::vector<torch::Tensor> train_twenty_steps(const std::string& optimizer, bool fused) {
  compat::foreach_on_cpu_for_tests = fused;
  torch::manual_seed(3);
  std::vector<Variable> vars = {{"net/w", torch::randn({4, 3}).requires_grad_()},
                                {"net/bias", torch::randn({3}).requires_grad_()},
                                {"net/v", torch::randn({2, 2, 2}).requires_grad_()}};
  HParams hp;
  hp.optimizer = optimizer;
  hp.momentum = 0.9;
  hp.rmsprop_momentum = 0.9;
  auto opt = create_optimizer(train::optimizer_options(hp), vars);
  for (int step = 0; step < 20; ++step) {
    for (size_t i = 0; i < vars.size(); ++i) {
      auto& v = vars[i].var;
      if (i == 2 && step >= 5) {
        v.mutable_grad() = torch::Tensor();
      } else {
        v.mutable_grad() = torch::randn(v.sizes());
      }
    }
    opt->step(0.01);
  }
  compat::foreach_on_cpu_for_tests = false;
  std::vector<torch::Tensor> out;
  for (const auto& v : vars) out.push_back(v.var.detach().clone());
  for (const auto& s : opt->slots()) out.push_back(s.value.detach().clone());
  return out;
}

// The fused path (_foreach_* kernels: CUDA's, run here on the CPU) against
// the per-tensor loops, for every optimizer that has one (ftrl keeps its
// loop everywhere). LibTorch 1.13 has no _foreach_* of every kind the step
// needs: there the fused code runs through its per-tensor fallbacks, which
// still checks the fused formulation; the CUDA LibTorch 2.x leg runs the
// real kernels.
TEST(Optimizers, FusedPathMatchesThePerTensorLoops) {
  for (const char* name :
       {"sgd", "momentum", "rmsprop", "adadelta", "adagrad", "adam", "adamweightdecay"}) {
    const auto loop = train_twenty_steps(name, false);
    const auto fused = train_twenty_steps(name, true);
    ASSERT_EQ(loop.size(), fused.size()) << name;
    for (size_t i = 0; i < loop.size(); ++i) {
      const double scale = std::max(loop[i].abs().max().item<double>(), 1e-12);
      const double diff = (loop[i] - fused[i]).abs().max().item<double>();
      EXPECT_LE(diff / scale, 1e-6) << name << " tensor " << i;
    }
    // 20 steps moved the variables (the comparison is not of two
    // untouched copies).
    torch::manual_seed(3);
    EXPECT_FALSE(torch::allclose(loop[0], torch::randn({4, 3}))) << name;
  }
}

TEST(Optimizers, CenteredRMSPropFusedPathMatchesItsLoop) {
  auto run = [](bool fused) {
    compat::foreach_on_cpu_for_tests = fused;
    torch::manual_seed(4);
    std::vector<Variable> vars = {{"w", torch::randn({5}).requires_grad_()}};
    RMSPropOptions o;
    o.centered = true;
    o.momentum = 0.5;
    RMSProp opt(vars, o);
    for (int step = 0; step < 20; ++step) {
      vars[0].var.mutable_grad() = torch::randn({5});
      opt.step(0.01);
    }
    compat::foreach_on_cpu_for_tests = false;
    std::vector<torch::Tensor> out{vars[0].var.detach().clone()};
    for (const auto& s : opt.slots()) out.push_back(s.value.detach().clone());
    return out;
  };
  const auto loop = run(false), fused = run(true);
  for (size_t i = 0; i < loop.size(); ++i) {
    const double scale = std::max(loop[i].abs().max().item<double>(), 1e-12);
    EXPECT_LE((loop[i] - fused[i]).abs().max().item<double>() / scale, 1e-6) << i;
  }
}

}  // namespace
}  // namespace fastnn::optim
