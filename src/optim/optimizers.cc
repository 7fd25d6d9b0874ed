#include "src/optim/optimizers.h"

#include <torch/torch.h>

#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/compat/torch_compat.h"
#include "src/config/value_parse.h"

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

namespace {

// The fused (CUDA) path's operands: the variables that have a gradient,
// their gradients, and each slot list at the same positions.
struct Fused {
  std::vector<torch::Tensor> params, grads;
  std::vector<std::vector<torch::Tensor>> slots;
};

// Fused when the variables live where _foreach_* kernels serve them and at
// least one has a gradient (the kernels refuse empty lists).
bool use_fused(const std::vector<Variable>& vars) {
  if (vars.empty() || !compat::use_foreach(vars.front().var.device())) return false;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) return true;
  }
  return false;
}

Fused gather(const std::vector<Variable>& vars,
             std::initializer_list<const std::vector<torch::Tensor>*> slot_lists) {
  Fused f;
  f.slots.resize(slot_lists.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].var.grad().defined()) continue;
    f.params.push_back(vars[i].var);
    f.grads.push_back(vars[i].var.grad());
    size_t k = 0;
    for (const auto* list : slot_lists) f.slots[k++].push_back((*list)[i]);
  }
  return f;
}

// Adam's and AdamWeightDecay's shared part on the fused path: m and v
// (slots 0 and 1 of `f`) updated, and sqrt(v) + epsilon returned.
std::vector<torch::Tensor> fused_adam_moments(Fused& f, double beta1, double beta2,
                                              double epsilon) {
  auto &m = f.slots[0], &v = f.slots[1];
  compat::foreach_mul_(m, beta1);
  compat::foreach_add_(m, f.grads, 1.0 - beta1);
  compat::foreach_mul_(v, beta2);
  compat::foreach_addcmul_(v, f.grads, f.grads, 1.0 - beta2);
  auto denom = compat::foreach_sqrt(v);
  compat::foreach_add_(denom, epsilon);
  return denom;
}

}  // namespace

void GradientDescent::step(double lr) {
  torch::NoGradGuard no_grad;
  if (use_fused(vars_)) {
    Fused f = gather(vars_, {});
    compat::foreach_add_(f.params, f.grads, -lr);
    return;
  }
  for (auto& v : vars_) {
    const auto& g = v.var.grad();
    if (g.defined()) v.var.add_(g, -lr);
  }
}

Momentum::Momentum(std::vector<Variable> vars, const MomentumOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  accum_ = make_slots(0.0);
}

void Momentum::step(double lr) {
  torch::NoGradGuard no_grad;
  // CUDA: the same three operations, each one fused launch over every
  // variable (TF1's accum = m·accum + g; var -= lr·accum).
  if (use_fused(vars_)) {
    Fused f = gather(vars_, {&accum_});
    auto& accums = f.slots[0];
    compat::foreach_mul_(accums, options_.momentum);
    compat::foreach_add_(accums, f.grads);
    compat::foreach_add_(f.params, accums, -lr);
    return;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].mul_(options_.momentum).add_(g);
    vars_[i].var.add_(accum_[i], -lr);
  }
}

std::vector<Slot> Momentum::slots() { return named(accum_, "Momentum"); }

RMSProp::RMSProp(std::vector<Variable> vars, const RMSPropOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  ms_ = make_slots(1.0);
  if (options_.centered) mg_ = make_slots(0.0);
  mom_ = make_slots(0.0);
}

void RMSProp::step(double lr) {
  torch::NoGradGuard no_grad;
  const double decay = options_.decay;
  if (use_fused(vars_)) {
    Fused fused = gather(vars_, {&ms_, &mom_});
    auto &ms = fused.slots[0], &mom = fused.slots[1];
    compat::foreach_mul_(ms, decay);
    compat::foreach_addcmul_(ms, fused.grads, fused.grads, 1.0 - decay);
    std::vector<torch::Tensor> denom;
    if (options_.centered) {
      std::vector<torch::Tensor> mg = gather(vars_, {&mg_}).slots[0];
      compat::foreach_mul_(mg, decay);
      compat::foreach_add_(mg, fused.grads, 1.0 - decay);
      denom = compat::foreach_add(ms, 0.0);
      compat::foreach_addcmul_(denom, mg, mg, -1.0);
      compat::foreach_add_(denom, options_.epsilon);
    } else {
      denom = compat::foreach_add(ms, options_.epsilon);
    }
    compat::foreach_sqrt_(denom);
    compat::foreach_mul_(mom, options_.momentum);
    compat::foreach_addcdiv_(mom, fused.grads, denom, lr);
    compat::foreach_add_(fused.params, mom, -1.0);
    return;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& grad = vars_[i].var.grad();
    if (!grad.defined()) continue;
    ms_[i].mul_(decay).addcmul_(grad, grad, 1.0 - decay);
    torch::Tensor denom;
    if (options_.centered) {
      mg_[i].mul_(decay).add_(grad, 1.0 - decay);
      denom = (ms_[i] - mg_[i] * mg_[i] + options_.epsilon).sqrt_();
    } else {
      denom = (ms_[i] + options_.epsilon).sqrt_();
    }
    mom_[i].mul_(options_.momentum).addcdiv_(grad, denom, lr);
    vars_[i].var.sub_(mom_[i]);
  }
}

std::vector<Slot> RMSProp::slots() {
  // TF1 creates the slots in this order and uniquifies the names:
  // rms "RMSProp", [mg "RMSProp_1",] momentum "RMSProp_1" or "RMSProp_2".
  auto out = named(ms_, "RMSProp");
  if (options_.centered) {
    auto mg = named(mg_, "RMSProp_1");
    out.insert(out.end(), mg.begin(), mg.end());
  }
  auto mom = named(mom_, options_.centered ? "RMSProp_2" : "RMSProp_1");
  out.insert(out.end(), mom.begin(), mom.end());
  return out;
}

Adadelta::Adadelta(std::vector<Variable> vars, const AdadeltaOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  accum_ = make_slots(0.0);
  accum_update_ = make_slots(0.0);
}

void Adadelta::step(double lr) {
  torch::NoGradGuard no_grad;
  const double rho = options_.rho, epsilon = options_.epsilon;
  if (use_fused(vars_)) {
    Fused f = gather(vars_, {&accum_, &accum_update_});
    auto &accum = f.slots[0], &accum_update = f.slots[1];
    compat::foreach_mul_(accum, rho);
    compat::foreach_addcmul_(accum, f.grads, f.grads, 1.0 - rho);
    auto update = compat::foreach_add(accum_update, epsilon);
    compat::foreach_sqrt_(update);
    auto scale = compat::foreach_add(accum, epsilon);
    compat::foreach_sqrt_(scale);
    compat::foreach_div_(update, scale);
    compat::foreach_mul_(update, f.grads);
    compat::foreach_add_(f.params, update, -lr);
    compat::foreach_mul_(accum_update, rho);
    compat::foreach_addcmul_(accum_update, update, update, 1.0 - rho);
    return;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].mul_(rho).addcmul_(g, g, 1.0 - rho);
    auto update = (accum_update_[i] + epsilon).sqrt_().div_((accum_[i] + epsilon).sqrt_()).mul_(g);
    vars_[i].var.add_(update, -lr);
    accum_update_[i].mul_(rho).addcmul_(update, update, 1.0 - rho);
  }
}

std::vector<Slot> Adadelta::slots() {
  auto out = named(accum_, "Adadelta");
  auto upd = named(accum_update_, "Adadelta_1");
  out.insert(out.end(), upd.begin(), upd.end());
  return out;
}

Adagrad::Adagrad(std::vector<Variable> vars, const AdagradOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  accum_ = make_slots(options_.initial_accumulator_value);
}

void Adagrad::step(double lr) {
  torch::NoGradGuard no_grad;
  if (use_fused(vars_)) {
    Fused f = gather(vars_, {&accum_});
    compat::foreach_addcmul_(f.slots[0], f.grads, f.grads, 1.0);
    compat::foreach_addcdiv_(f.params, f.grads, compat::foreach_sqrt(f.slots[0]), -lr);
    return;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    accum_[i].addcmul_(g, g);
    vars_[i].var.addcdiv_(g, accum_[i].sqrt(), -lr);
  }
}

std::vector<Slot> Adagrad::slots() { return named(accum_, "Adagrad"); }

Adam::Adam(std::vector<Variable> vars, const AdamOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  m_ = make_slots(0.0);
  v_ = make_slots(0.0);
  beta1_power_ = torch::tensor(options_.beta1, torch::kFloat64);
  beta2_power_ = torch::tensor(options_.beta2, torch::kFloat64);
  beta1_power_host_ = options_.beta1;
  beta2_power_host_ = options_.beta2;
}

void Adam::slots_written() {
  beta1_power_host_ = beta1_power_.item<double>();
  beta2_power_host_ = beta2_power_.item<double>();
}

void Adam::step(double lr) {
  torch::NoGradGuard no_grad;
  const double beta1 = options_.beta1, beta2 = options_.beta2;
  const double b1p = beta1_power_host_;
  const double b2p = beta2_power_host_;
  const double lr_t = lr * std::sqrt(1.0 - b2p) / (1.0 - b1p);
  if (use_fused(vars_)) {
    Fused f = gather(vars_, {&m_, &v_});
    auto& m = f.slots[0];
    const auto denom = fused_adam_moments(f, beta1, beta2, options_.epsilon);
    compat::foreach_addcdiv_(f.params, m, denom, -lr_t);
  } else {
    for (size_t i = 0; i < vars_.size(); ++i) {
      const auto& g = vars_[i].var.grad();
      if (!g.defined()) continue;
      m_[i].mul_(beta1).add_(g, 1.0 - beta1);
      v_[i].mul_(beta2).addcmul_(g, g, 1.0 - beta2);
      vars_[i].var.addcdiv_(m_[i], v_[i].sqrt().add_(options_.epsilon), -lr_t);
    }
  }
  // The same float64 product as multiplying the slot in place.
  beta1_power_host_ *= beta1;
  beta2_power_host_ *= beta2;
  beta1_power_.fill_(beta1_power_host_);
  beta2_power_.fill_(beta2_power_host_);
}

std::vector<Slot> Adam::slots() {
  auto out = named(m_, "Adam");
  auto v = named(v_, "Adam_1");
  out.insert(out.end(), v.begin(), v.end());
  out.push_back({"beta1_power", beta1_power_});
  out.push_back({"beta2_power", beta2_power_});
  return out;
}

Ftrl::Ftrl(std::vector<Variable> vars, const FtrlOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
  accum_ = make_slots(options_.initial_accumulator_value);
  linear_ = make_slots(0.0);
}

void Ftrl::step(double lr) {
  torch::NoGradGuard no_grad;
  const double power = options_.learning_rate_power;
  const double l1 = options_.l1, l2 = options_.l2;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& g = vars_[i].var.grad();
    if (!g.defined()) continue;
    auto& var = vars_[i].var;
    auto accum_new = accum_[i] + g * g;
    auto sigma = (accum_new.pow(-power) - accum_[i].pow(-power)) / lr;
    // TF's order (ApplyFtrl): linear += grad - sigma * var.
    linear_[i].add_(g - sigma * var);
    auto quadratic = accum_new.pow(-power) / lr + 2.0 * l2;
    auto shrunk = (linear_[i].sign() * l1 - linear_[i]) / quadratic;
    var.copy_(torch::where(linear_[i].abs() > l1, shrunk, torch::zeros_like(var)));
    accum_[i].copy_(accum_new);
  }
}

std::vector<Slot> Ftrl::slots() {
  auto out = named(accum_, "Ftrl");
  auto lin = named(linear_, "Ftrl_1");
  out.insert(out.end(), lin.begin(), lin.end());
  return out;
}

AdamWeightDecay::AdamWeightDecay(std::vector<Variable> vars, const AdamWeightDecayOptions& options)
    : Optimizer(std::move(vars)), options_(options) {
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
  const double beta1 = options_.beta1, beta2 = options_.beta2;
  if (use_fused(vars_)) {
    Fused fused = gather(vars_, {&m_, &v_});
    auto& first_moment = fused.slots[0];
    const auto denom = fused_adam_moments(fused, beta1, beta2, options_.epsilon);
    auto update = compat::foreach_div(first_moment, denom);
    std::vector<torch::Tensor> decayed_updates, decayed_params;
    size_t fused_index = 0;
    for (size_t i = 0; i < vars_.size(); ++i) {
      if (!vars_[i].var.grad().defined()) continue;
      if (decayed_[i]) {
        decayed_updates.push_back(update[fused_index]);
        decayed_params.push_back(fused.params[fused_index]);
      }
      ++fused_index;
    }
    if (!decayed_updates.empty()) {
      compat::foreach_add_(decayed_updates, decayed_params, options_.weight_decay_rate);
    }
    compat::foreach_add_(fused.params, update, -lr);
    return;
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    const auto& grad = vars_[i].var.grad();
    if (!grad.defined()) continue;
    m_[i].mul_(beta1).add_(grad, 1.0 - beta1);
    v_[i].mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
    auto update = m_[i] / (v_[i].sqrt() + options_.epsilon);
    if (decayed_[i]) update.add_(vars_[i].var, options_.weight_decay_rate);
    vars_[i].var.add_(update, -lr);
  }
}

std::vector<Slot> AdamWeightDecay::slots() {
  auto out = named(m_, "adam_m");
  auto v = named(v_, "adam_v");
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

namespace {

using OptimizerPtr = std::unique_ptr<Optimizer>;
using Vars = std::vector<Variable>;

struct OptimizerRow {
  const char* name;
  OptimizerPtr (*make)(const OptimizerOptions& o, Vars vars);
};

// The one list of `optimizer` values (TF-slim's, then FastNN's
// adamweightdecay): each row makes its optimizer with its own options.
const OptimizerRow kOptimizers[] = {
    {"adadelta",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<Adadelta>(std::move(vars), o.adadelta);
     }},
    {"adagrad",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<Adagrad>(std::move(vars), o.adagrad);
     }},
    {"adam",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<Adam>(std::move(vars), o.adam);
     }},
    {"ftrl",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<Ftrl>(std::move(vars), o.ftrl);
     }},
    {"momentum",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<Momentum>(std::move(vars), o.momentum);
     }},
    {"rmsprop",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<RMSProp>(std::move(vars), o.rmsprop);
     }},
    {"sgd",
     [](const OptimizerOptions&, Vars vars) -> OptimizerPtr {
       return std::make_unique<GradientDescent>(std::move(vars));
     }},
    {"adamweightdecay",
     [](const OptimizerOptions& o, Vars vars) -> OptimizerPtr {
       return std::make_unique<AdamWeightDecay>(std::move(vars), o.adam_weight_decay);
     }},
};

}  // namespace

std::vector<std::string> optimizer_names() { return names_of(kOptimizers); }

std::unique_ptr<Optimizer> create_optimizer(const OptimizerOptions& options,
                                            std::vector<Variable> vars) {
  for (const OptimizerRow& row : kOptimizers) {
    if (options.name == row.name) return row.make(options, std::move(vars));
  }
  throw ConfigError(options.name_where + ": optimizer: '" + options.name +
                    "' is not valid; valid values: " + join_list(optimizer_names()));
}

std::string format_optimizers_markdown() {
  std::string out =
      "### Optimizer names\n\n"
      "The valid values of `optimizer` (the optimizer factory's table; an "
      "unknown name stops the run with exit code 2 and this list).\n\n"
      "| `optimizer` | TensorFlow 1 optimizer |\n|---|---|\n";
  const OptimizerOptions defaults;
  for (const OptimizerRow& row : kOptimizers) {
    out += "| `" + std::string(row.name) + "` | " + row.make(defaults, {})->name() + " |\n";
  }
  return out;
}

}  // namespace fastnn::optim
