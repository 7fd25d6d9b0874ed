#include "src/optim/optimizers.h"

#include <torch/torch.h>

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

std::vector<std::string> optimizer_names() {
  return {"sgd", "momentum", "rmsprop"};
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
  throw ConfigError(hp.where("optimizer") + ": optimizer: '" + name +
                    "' is not implemented in this build yet; available: " +
                    join_list(optimizer_names()));
}

}  // namespace fastnn::optim
