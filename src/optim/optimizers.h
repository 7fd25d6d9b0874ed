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

/// The optimizer named by `hp.optimizer` with FastNN's keys; throws
/// ConfigError for a name this build does not implement.
std::unique_ptr<Optimizer> create_optimizer(const HParams& hp,
                                            std::vector<Variable> vars);

/// Names create_optimizer accepts.
std::vector<std::string> optimizer_names();

}  // namespace fastnn::optim
