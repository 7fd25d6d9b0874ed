// TF1-exact optimizers (reference/fastnn.md §5.1). Each keeps its slots as
// named tensors ("<var>/Momentum", "<var>/RMSProp", ...) so checkpoints can
// save and restore them.
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace fastnn {
struct HParams;
}

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

  const std::vector<Variable>& variables() const {
    return vars_;
  }

 protected:
  /// Allocates one slot per variable, filled with `init`.
  std::vector<torch::Tensor> make_slots(double init) const;
  /// Names "<var>/<suffix>" for a slot vector.
  std::vector<Slot> named(const std::vector<torch::Tensor>& s,
                          const std::string& suffix) const;

  std::vector<Variable> vars_;
};

/// `var -= lr * g`.
class GradientDescent : public Optimizer {
 public:
  using Optimizer::Optimizer;
  void step(double lr) override;
  std::vector<Slot> slots() override {
    return {};
  }
  std::string name() const override {
    return "GradientDescent";
  }
};

/// `accum = momentum * accum + g; var -= lr * accum` (not Nesterov).
class Momentum : public Optimizer {
 public:
  Momentum(std::vector<Variable> vars, double momentum);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "Momentum";
  }

 private:
  double momentum_;
  std::vector<torch::Tensor> accum_;
};

/// TF1 RMSProp: the mean-square slot starts at 1.0 and epsilon sits inside
/// the square root. `ms = d*ms + (1-d)*g^2;
/// mom = m*mom + lr*g/sqrt(ms + eps); var -= mom`.
class RMSProp : public Optimizer {
 public:
  RMSProp(std::vector<Variable> vars,
          double decay,
          double momentum,
          double epsilon);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "RMSProp";
  }

 private:
  double decay_, momentum_, epsilon_;
  std::vector<torch::Tensor> ms_, mom_;
};

/// TF1 Adadelta: slots accum ("Adadelta") and accum_update ("Adadelta_1")
/// start at 0. `accum = rho*accum + (1-rho)*g^2;
/// upd = sqrt(accum_update+eps)/sqrt(accum+eps)*g; var -= lr*upd;
/// accum_update = rho*accum_update + (1-rho)*upd^2`.
class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<Variable> vars, double rho, double epsilon);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "Adadelta";
  }

 private:
  double rho_, epsilon_;
  std::vector<torch::Tensor> accum_, accum_update_;
};

/// TF1 Adagrad: the "Adagrad" slot starts at initial_accumulator_value.
/// `accum += g^2; var -= lr*g/sqrt(accum)` (no epsilon).
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Variable> vars, double initial_accumulator_value);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "Adagrad";
  }

 private:
  std::vector<torch::Tensor> accum_;
};

/// TF1 Adam: m ("Adam") and v ("Adam_1") start at 0; beta1_power and
/// beta2_power start at beta1, beta2 and are multiplied after each step.
/// `lr_t = lr*sqrt(1-b2^t)/(1-b1^t); var -= lr_t*m/(sqrt(v)+eps)` with
/// epsilon outside the bias correction.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Variable> vars, double beta1, double beta2, double epsilon);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "Adam";
  }

 private:
  double beta1_, beta2_, epsilon_;
  std::vector<torch::Tensor> m_, v_;
  torch::Tensor beta1_power_, beta2_power_;
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
  Ftrl(std::vector<Variable> vars,
       double learning_rate_power,
       double initial_accumulator_value,
       double l1,
       double l2);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "Ftrl";
  }

 private:
  double power_, l1_, l2_;
  std::vector<torch::Tensor> accum_, linear_;
};

/// FastNN's BERT-style AdamWeightDecay: no bias correction;
/// `upd = m/(sqrt(v)+eps) + 0.01*var` unless the variable name contains
/// "LayerNorm", "layer_norm" or "bias"; `var -= lr*upd`. Slots "adam_m",
/// "adam_v".
class AdamWeightDecay : public Optimizer {
 public:
  AdamWeightDecay(std::vector<Variable> vars,
                  double beta1,
                  double beta2,
                  double epsilon,
                  double weight_decay_rate = 0.01);
  void step(double lr) override;
  std::vector<Slot> slots() override;
  std::string name() const override {
    return "AdamWeightDecay";
  }

 private:
  double beta1_, beta2_, epsilon_, decay_;
  std::vector<torch::Tensor> m_, v_;
  std::vector<bool> decayed_;
};

/// The optimizer named by `hp.optimizer` with FastNN's keys; throws
/// ConfigError for a name this build does not implement.
std::unique_ptr<Optimizer> create_optimizer(const HParams& hp,
                                            std::vector<Variable> vars);

/// Names create_optimizer accepts.
std::vector<std::string> optimizer_names();

}  // namespace fastnn::optim
