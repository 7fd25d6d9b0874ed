#include "src/optim/optimizers.h"

#include <torch/torch.h>

#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"

namespace fastnn::optim {

std::vector<torch::Tensor> Optimizer::make_slots(double init) const {
  std::vector<torch::Tensor> out;
  out.reserve(vars_.size());
  for (const auto& v : vars_) {
    out.push_back(torch::full_like(v.var, init).detach());
  }
  return out;
}

std::vector<Slot> Optimizer::named(const std::vector<torch::Tensor>& s,
                                   const std::string& suffix) const {
  std::vector<Slot> out;
  for (size_t i = 0; i < vars_.size(); ++i) {
    out.push_back({vars_[i].name + "/" + suffix, s[i]});
  }
  return out;
}

void GradientDescent::step(double lr) {
  torch::NoGradGuard no_grad;
  for (auto& v : vars_) {
    const auto& g = v.var.grad();
    if (g.defined()) v.var.add_(g, -lr);
  }
}

Momentum::Momentum(std::vector<Variable> vars, double momentum)
    : Optimizer(std::move(vars)), momentum_(momentum) {
  accum_ = make_slots(0.0);
}

void Momentum::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].mul_(momentum_).add_(g);
    vars_[i].var.add_(accum_[i], -lr);
  }
}

std::vector<Slot> Momentum::slots() {
  return named(accum_, "Momentum");
}

RMSProp::RMSProp(std::vector<Variable> vars,
                 double decay,
                 double momentum,
                 double epsilon)
    : Optimizer(std::move(vars)),
      decay_(decay),
      momentum_(momentum),
      epsilon_(epsilon) {
  ms_ = make_slots(1.0);
  mom_ = make_slots(0.0);
}

void RMSProp::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    ms_[i].mul_(decay_).addcmul_(g, g, 1.0 - decay_);
    auto denom = (ms_[i] + epsilon_).sqrt_();
    mom_[i].mul_(momentum_).addcdiv_(g, denom, lr);
    vars_[i].var.sub_(mom_[i]);
  }
}

std::vector<Slot> RMSProp::slots() {
  auto out = named(ms_, "RMSProp");
  auto mom = named(mom_, "RMSProp_1");
  out.insert(out.end(), mom.begin(), mom.end());
  return out;
}

Adadelta::Adadelta(std::vector<Variable> vars, double rho, double epsilon)
    : Optimizer(std::move(vars)), rho_(rho), epsilon_(epsilon) {
  accum_ = make_slots(0.0);
  accum_update_ = make_slots(0.0);
}

void Adadelta::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].mul_(rho_).addcmul_(g, g, 1.0 - rho_);
    auto update = (accum_update_[i] + epsilon_).sqrt_()
                      .div_((accum_[i] + epsilon_).sqrt_())
                      .mul_(g);
    vars_[i].var.add_(update, -lr);
    accum_update_[i].mul_(rho_).addcmul_(update, update, 1.0 - rho_);
  }
}

std::vector<Slot> Adadelta::slots() {
  auto out = named(accum_, "Adadelta");
  auto upd = named(accum_update_, "Adadelta_1");
  out.insert(out.end(), upd.begin(), upd.end());
  return out;
}

Adagrad::Adagrad(std::vector<Variable> vars, double initial_accumulator_value)
    : Optimizer(std::move(vars)) {
  accum_ = make_slots(initial_accumulator_value);
}

void Adagrad::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].addcmul_(g, g);
    vars_[i].var.addcdiv_(g, accum_[i].sqrt(), -lr);
  }
}

std::vector<Slot> Adagrad::slots() {
  return named(accum_, "Adagrad");
}

Adam::Adam(std::vector<Variable> vars, double beta1, double beta2, double epsilon)
    : Optimizer(std::move(vars)), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {
  m_ = make_slots(0.0);
  v_ = make_slots(0.0);
  beta1_power_ = torch::tensor(beta1, torch::kFloat64);
  beta2_power_ = torch::tensor(beta2, torch::kFloat64);
}

void Adam::step(double lr) {
  torch::NoGradGuard no_grad;
  const double b1p = beta1_power_.item<double>();
  const double b2p = beta2_power_.item<double>();
  const double lr_t = lr * std::sqrt(1.0 - b2p) / (1.0 - b1p);
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    m_[i].mul_(beta1_).add_(g, 1.0 - beta1_);
    v_[i].mul_(beta2_).addcmul_(g, g, 1.0 - beta2_);
    vars_[i].var.addcdiv_(m_[i], v_[i].sqrt().add_(epsilon_), -lr_t);
  }
  beta1_power_.mul_(beta1_);
  beta2_power_.mul_(beta2_);
}

std::vector<Slot> Adam::slots() {
  auto out = named(m_, "Adam");
  auto v = named(v_, "Adam_1");
  out.insert(out.end(), v.begin(), v.end());
  out.push_back({"beta1_power", beta1_power_});
  out.push_back({"beta2_power", beta2_power_});
  return out;
}

Ftrl::Ftrl(std::vector<Variable> vars,
           double learning_rate_power,
           double initial_accumulator_value,
           double l1,
           double l2)
    : Optimizer(std::move(vars)), power_(learning_rate_power), l1_(l1), l2_(l2) {
  accum_ = make_slots(initial_accumulator_value);
  linear_ = make_slots(0.0);
}

void Ftrl::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    auto& var = vars_[i].var;
    auto accum_new = accum_[i] + g * g;
    auto sigma = (accum_new.pow(-power_) - accum_[i].pow(-power_)) / lr;
    linear_[i].add_(g).sub_(sigma * var);
    auto quadratic = accum_new.pow(-power_) / lr + 2.0 * l2_;
    auto shrunk = (linear_[i].sign() * l1_ - linear_[i]) / quadratic;
    var.copy_(torch::where(linear_[i].abs() > l1_, shrunk, torch::zeros_like(var)));
    accum_[i].copy_(accum_new);
  }
}

std::vector<Slot> Ftrl::slots() {
  auto out = named(accum_, "Ftrl");
  auto lin = named(linear_, "Ftrl_1");
  out.insert(out.end(), lin.begin(), lin.end());
  return out;
}

AdamWeightDecay::AdamWeightDecay(std::vector<Variable> vars,
                                 double beta1,
                                 double beta2,
                                 double epsilon,
                                 double weight_decay_rate)
    : Optimizer(std::move(vars)),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon),
      decay_(weight_decay_rate) {
  m_ = make_slots(0.0);
  v_ = make_slots(0.0);
  for (const auto& v : vars_) {
    bool excluded = false;
    for (const char* pattern : {"LayerNorm", "layer_norm", "bias"}) {
      if (v.name.find(pattern) != std::string::npos) excluded = true;
    }
    decayed_.push_back(!excluded);
  }
}

void AdamWeightDecay::step(double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    m_[i].mul_(beta1_).add_(g, 1.0 - beta1_);
    v_[i].mul_(beta2_).addcmul_(g, g, 1.0 - beta2_);
    auto update = m_[i] / (v_[i].sqrt() + epsilon_);
    if (decayed_[i]) update.add_(vars_[i].var, decay_);
    vars_[i].var.add_(update, -lr);
  }
}

std::vector<Slot> AdamWeightDecay::slots() {
  auto out = named(m_, "adam_m");
  auto v = named(v_, "adam_v");
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

std::vector<std::string> optimizer_names() {
  return {"adadelta", "adagrad", "adam", "ftrl",
          "momentum", "rmsprop", "sgd",  "adamweightdecay"};
}

std::unique_ptr<Optimizer> create_optimizer(const HParams& hp,
                                            std::vector<Variable> vars) {
  const std::string& name = hp.optimizer;
  if (name == "sgd") return std::make_unique<GradientDescent>(std::move(vars));
  if (name == "momentum") {
    return std::make_unique<Momentum>(std::move(vars), hp.momentum);
  }
  if (name == "rmsprop") {
    return std::make_unique<RMSProp>(std::move(vars),
                                     hp.rmsprop_decay,
                                     hp.rmsprop_momentum,
                                     hp.opt_epsilon);
  }
  if (name == "adadelta") {
    return std::make_unique<Adadelta>(std::move(vars), hp.adadelta_rho,
                                      hp.opt_epsilon);
  }
  if (name == "adagrad") {
    return std::make_unique<Adagrad>(std::move(vars),
                                     hp.adagrad_initial_accumulator_value);
  }
  if (name == "adam") {
    return std::make_unique<Adam>(std::move(vars), hp.adam_beta1, hp.adam_beta2,
                                  hp.opt_epsilon);
  }
  if (name == "ftrl") {
    return std::make_unique<Ftrl>(std::move(vars), hp.ftrl_learning_rate_power,
                                  hp.ftrl_initial_accumulator_value,
                                  hp.ftrl_l1, hp.ftrl_l2);
  }
  if (name == "adamweightdecay") {
    return std::make_unique<AdamWeightDecay>(std::move(vars), hp.adam_beta1,
                                             hp.adam_beta2, hp.opt_epsilon);
  }
  throw ConfigError(hp.where("optimizer") + ": optimizer: '" + name +
                    "' is not implemented in this build yet; available: " +
                    join_list(optimizer_names()));
}

}  // namespace fastnn::optim
