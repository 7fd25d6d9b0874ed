// TF1-exact optimizers (docs/hyperparameters.md, "Optimizer"; checked
// against TensorFlow's, docs/design.md). Each keeps its slots as
// named tensors ("<var>/Momentum", "<var>/RMSProp", ...) so checkpoints can
// save and restore them. Settings come in an options struct whose defaults
// are TensorFlow 1's; the builder's optimizer_options fills them from
// FastNN's keys, whose defaults differ (opt_epsilon = 1.0,
// rmsprop_momentum = 0.9).
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace fastnn::optim {

/// A trainable variable and its TF-slim name.
struct Variable {
  std::string name;
  torch::Tensor var;
};

/// A named slot tensor owned by an optimizer.
struct Slot {
  std::string name;
  torch::Tensor value;
};

/// Applies TF1 update rules to `var` from `var.grad()`.
class Optimizer {
 public:
  explicit Optimizer(std::vector<Variable> vars) : vars_(std::move(vars)) {}
  virtual ~Optimizer() = default;

  /// One update with learning rate `lr`. Variables without a gradient are
  /// left unchanged.
  virtual void step(double lr) = 0;
  /// Every slot tensor, for checkpoints; restoring copies into these.
  virtual std::vector<Slot> slots() = 0;
  /// TF's class name, e.g. "RMSProp".
  virtual std::string name() const = 0;
  /// Something outside wrote into slots() (a restore, rank 0's broadcast):
  /// an optimizer that keeps host copies of slot values reads them again.
  virtual void slots_written() {}

  const std::vector<Variable>& variables() const { return vars_; }

 protected:
  /// Allocates one slot per variable, filled with `init`.
  std::vector<torch::Tensor> make_slots(double init) const;
  /// Names "<var>/<suffix>" for a slot vector.
  std::vector<Slot> named(const std::vector<torch::Tensor>& s, const std::string& suffix) const;

  std::vector<Variable> vars_;
};

/// `var -= lr * g`.
class GradientDescent : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void step(double lr) override;
  std::vector<Slot> slots() override { return {}; }
  std::string name() const override { return "GradientDescent"; }
};

/// TF1 MomentumOptimizer (use_nesterov=False).
struct MomentumOptions {
  /// Factor applied to the accumulator before adding the gradient.
  /// REQUIRES: in [0, 1].
  /// Default: 0.9 (TF-slim's --momentum; TF itself has no default)
  double momentum = 0.9;
};

/// `accum = momentum * accum + g; var -= lr * accum` (not Nesterov).
class Momentum : public Optimizer {
 public:
  explicit Momentum(std::vector<Variable> vars, const MomentumOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "Momentum"; }

 private:
  MomentumOptions options_;
  std::vector<torch::Tensor> accum_;
};

/// TF1 RMSPropOptimizer.
struct RMSPropOptions {
  /// Discount of the running mean of squared gradients (TF's `decay`, rho).
  /// REQUIRES: in [0, 1].
  /// Default: 0.9
  double decay = 0.9;
  /// Factor applied to the update accumulator.
  /// REQUIRES: in [0, 1].
  /// Default: 0.0
  double momentum = 0.0;
  /// Added to the mean square inside the square root.
  /// REQUIRES: > 0.
  /// Default: 1e-10
  double epsilon = 1e-10;
  /// Divide by the estimated variance (mean square minus the squared running
  /// mean gradient) instead of the mean square; adds the slot "RMSProp_1"
  /// (mg, starts at 0) and the momentum slot becomes "RMSProp_2".
  /// Default: false
  bool centered = false;
};

/// TF1 RMSProp: the mean-square slot starts at 1.0 and epsilon sits inside
/// the square root. `ms = d*ms + (1-d)*g^2;
/// mom = m*mom + lr*g/sqrt(ms + eps); var -= mom`. Centered:
/// `mg = d*mg + (1-d)*g; mom = m*mom + lr*g/sqrt(ms - mg^2 + eps)`.
/// Slots "RMSProp" (ms), ["RMSProp_1" (mg),] then the momentum slot.
class RMSProp : public Optimizer {
 public:
  explicit RMSProp(std::vector<Variable> vars, const RMSPropOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "RMSProp"; }

 private:
  RMSPropOptions options_;
  std::vector<torch::Tensor> ms_, mg_, mom_;  // mg_ only when centered
};

/// TF1 AdadeltaOptimizer.
struct AdadeltaOptions {
  /// Decay of both running averages.
  /// REQUIRES: in [0, 1].
  /// Default: 0.95
  double rho = 0.95;
  /// Added inside both square roots.
  /// REQUIRES: > 0.
  /// Default: 1e-8
  double epsilon = 1e-8;
};

/// TF1 Adadelta: slots accum ("Adadelta") and accum_update ("Adadelta_1")
/// start at 0. `accum = rho*accum + (1-rho)*g^2;
/// upd = sqrt(accum_update+eps)/sqrt(accum+eps)*g; var -= lr*upd;
/// accum_update = rho*accum_update + (1-rho)*upd^2`.
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Variable> vars, const AdadeltaOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "Adadelta"; }

 private:
  AdadeltaOptions options_;
  std::vector<torch::Tensor> accum_, accum_update_;
};

/// TF1 AdagradOptimizer.
struct AdagradOptions {
  /// Starting value of the "Adagrad" accumulator slot.
  /// REQUIRES: > 0.
  /// Default: 0.1
  double initial_accumulator_value = 0.1;
};

/// TF1 Adagrad: the "Adagrad" slot starts at initial_accumulator_value.
/// `accum += g^2; var -= lr*g/sqrt(accum)` (no epsilon).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Variable> vars, const AdagradOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "Adagrad"; }

 private:
  AdagradOptions options_;
  std::vector<torch::Tensor> accum_;
};

/// TF1 AdamOptimizer.
struct AdamOptions {
  /// Decay of the first moment m.
  /// REQUIRES: in [0, 1).
  /// Default: 0.9
  double beta1 = 0.9;
  /// Decay of the second moment v.
  /// REQUIRES: in [0, 1).
  /// Default: 0.999
  double beta2 = 0.999;
  /// Added to sqrt(v), outside the bias correction ("epsilon hat").
  /// REQUIRES: > 0.
  /// Default: 1e-8
  double epsilon = 1e-8;
};

/// TF1 Adam: m ("Adam") and v ("Adam_1") start at 0; beta1_power and
/// beta2_power start at beta1, beta2 and are multiplied after each step.
/// `lr_t = lr*sqrt(1-b2^t)/(1-b1^t); var -= lr_t*m/(sqrt(v)+eps)` with
/// epsilon outside the bias correction.
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Variable> vars, const AdamOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "Adam"; }
  void slots_written() override;

 private:
  AdamOptions options_;
  std::vector<torch::Tensor> m_, v_;
  /// The checkpointed slots (float64, on the variables' device) and their
  /// host copies, which the step reads: no device read per step.
  torch::Tensor beta1_power_, beta2_power_;
  double beta1_power_host_, beta2_power_host_;
};

/// TF1 FtrlOptimizer (without l2_shrinkage_regularization_strength).
struct FtrlOptions {
  /// How the per-coordinate learning rate falls as the accumulator grows
  /// (the kernel uses accum^-p); 0 keeps it fixed.
  /// REQUIRES: <= 0.
  /// Default: -0.5
  double learning_rate_power = -0.5;
  /// Starting value of the "Ftrl" accumulator slot.
  /// REQUIRES: >= 0.
  /// Default: 0.1
  double initial_accumulator_value = 0.1;
  /// TF's l1_regularization_strength.
  /// REQUIRES: >= 0.
  /// Default: 0.0
  double l1 = 0.0;
  /// TF's l2_regularization_strength.
  /// REQUIRES: >= 0.
  /// Default: 0.0
  double l2 = 0.0;
};

/// TF1 FTRL-proximal, following the training_ops kernel (note the minus):
/// `accum_new = accum + g^2;
/// linear += g - (accum_new^-p - accum^-p)/lr * var;
/// quadratic = accum_new^-p/lr + 2*l2;
/// var = |linear| > l1 ? (sign(linear)*l1 - linear)/quadratic : 0`.
/// Slots "Ftrl" (accum, starts at initial_accumulator_value) and "Ftrl_1"
/// (linear, starts at 0).
class Ftrl : public Optimizer {
 public:
  explicit Ftrl(std::vector<Variable> vars, const FtrlOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "Ftrl"; }

 private:
  FtrlOptions options_;
  std::vector<torch::Tensor> accum_, linear_;
};

/// FastNN's BERT-style AdamWeightDecayOptimizer.
struct AdamWeightDecayOptions {
  /// Decay of the first moment.
  /// REQUIRES: in [0, 1).
  /// Default: 0.9
  double beta1 = 0.9;
  /// Decay of the second moment.
  /// REQUIRES: in [0, 1).
  /// Default: 0.999
  double beta2 = 0.999;
  /// Added to sqrt(v).
  /// REQUIRES: > 0.
  /// Default: 1e-6 (BERT's)
  double epsilon = 1e-6;
  /// Decoupled weight decay added to the update of decayed variables.
  /// REQUIRES: >= 0.
  /// Default: 0.01 (FastNN's fixed value; BERT's default is 0.0)
  double weight_decay_rate = 0.01;
};

/// FastNN's BERT-style AdamWeightDecay: no bias correction;
/// `upd = m/(sqrt(v)+eps) + weight_decay_rate*var` unless the variable name
/// contains "LayerNorm", "layer_norm" or "bias"; `var -= lr*upd`. Slots
/// "adam_m", "adam_v".
class AdamWeightDecay : public Optimizer {
 public:
  explicit AdamWeightDecay(std::vector<Variable> vars, const AdamWeightDecayOptions& options = {});
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override { return "AdamWeightDecay"; }

 private:
  AdamWeightDecayOptions options_;
  std::vector<torch::Tensor> m_, v_;
  std::vector<bool> decayed_;
};

/// Which optimizer create_optimizer makes, and the options of each (only
/// the named one's are read).
struct OptimizerOptions {
  /// A value of optimizer_names().
  std::string name = "rmsprop";
  /// Where `name` was set ("flowers.cfg:3", "command line"), for the error.
  std::string name_where = "default";
  AdadeltaOptions adadelta;
  AdagradOptions adagrad;
  AdamOptions adam;
  FtrlOptions ftrl;
  MomentumOptions momentum;
  RMSPropOptions rmsprop;
  AdamWeightDecayOptions adam_weight_decay;
};

/// The optimizer named by `options.name`, with its row's options. Throws
/// ConfigError "<name_where>: optimizer: 'X' is not valid; valid values:
/// ..." for a name not in the table; the config loader does not check this
/// key.
std::unique_ptr<Optimizer> create_optimizer(const OptimizerOptions& options,
                                            std::vector<Variable> vars);

/// The valid values of `optimizer`, in table order. The only list of them.
std::vector<std::string> optimizer_names();

/// The "Optimizer names" section of docs/hyperparameters.md (a Markdown
/// table: name, TF class), printed by hparams_doc after the key tables.
std::string format_optimizers_markdown();

}  // namespace fastnn::optim
