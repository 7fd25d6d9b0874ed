// lenet on mock data with Adam and weight decay, and every piece the
// trainer builds around a Step, on a chosen device (step_test, gpu_test).
#pragma once

#include <torch/torch.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/classifier.h"
#include "src/dist/cluster.h"
#include "src/optim/optimizers.h"
#include "src/train/builder.h"
#include "src/train/distributed_step.h"
#include "src/train/loss_scale.h"
#include "src/train/step.h"
#include "src/train/train_state.h"

namespace fastnn::train::testing {

struct StepRigOptions {
  torch::Device device = torch::kCPU;
  bool read_every_step = true;
  /// hp.loss_scaling: "static" or "dynamic".
  std::string loss_scaling = "static";
  Autocast autocast = Autocast::kOff;
  GradientFault fault;
  std::optional<double> max_gradient_norm;
  MixupOptions mixup;
  /// Set: this rig is one worker of a job (Gloo on the CPU), and starts
  /// from rank 0's state.
  std::optional<dist::ClusterSpec> cluster;
  /// StepOptions::accumulation_steps: each step's kBatch images arrive as
  /// this many micro-batches.
  int64_t accumulation_steps = 1;
  /// Micro-batches a step's input holds (the input ends inside a step when
  /// fewer than accumulation_steps); 0: all of them.
  int64_t input_micro_batches = 0;
};

class StepRig {
 public:
  static constexpr int64_t kBatch = 16;

  explicit StepRig(StepRigOptions o)
      : device_(o.device),
        accumulation_(o.accumulation_steps),
        available_(o.input_micro_batches > 0 ? o.input_micro_batches : o.accumulation_steps) {
    HParams hp;
    hp.model_name = "lenet";
    hp.dataset_name = "mock";
    hp.num_classes = 10;
    hp.optimizer = "adam";
    hp.weight_decay = 4e-5;
    hp.loss_scaling = o.loss_scaling;
    hp.dropout_keep_prob = 1;  // no random masks: two rigs compute the same
    torch::manual_seed(7);
    built = build(hp, "train");
    std::vector<optim::Variable> vars;
    for (const auto& v : models::model_variables(*built.model)) {
      if (v.trainable) vars.push_back({v.name, v.tensor});
    }
    optimizer = optim::create_optimizer(optimizer_options(hp), std::move(vars));
    scaler = std::make_unique<LossScaler>(loss_scale_options(hp, false));
    state = std::make_unique<TrainState>(*built.model, *optimizer, *scaler, std::nullopt);
    if (device_.is_cuda()) state->to(device_);
    built.model->train();
    if (o.cluster) {
      hp.batch_size = kBatch;
      hp.worker_timeout_secs = 30;
      std::vector<torch::Tensor> trainable;
      for (const auto& v : optimizer->variables()) trainable.push_back(v.var);
      dist =
          std::make_unique<DistributedStep>(distributed_step_options(hp), *o.cluster,
                                            dist::session_options(hp, dist::process_environment()),
                                            device_, *built.model, std::move(trainable));
      std::vector<torch::Tensor> everything = built.model->parameters();
      for (const auto& b : built.model->buffers()) everything.push_back(b);
      dist->broadcast_from_chief(everything, "the rig's model");
    }
    StepOptions so;
    so.weight_decay = hp.weight_decay;
    so.max_gradient_norm = o.max_gradient_norm;
    so.mixup = o.mixup;
    so.read_every_step = o.read_every_step;
    so.autocast = o.autocast;
    so.accumulation_steps = o.accumulation_steps;
    step = std::make_unique<Step>(so, *built.model, *optimizer, *scaler, *state, dist.get(),
                                  std::move(o.fault));
  }

  ~StepRig() {
    if (dist) dist->finish(0);
  }

  /// Step `i` (its batch drawn from seed 100 + i).
  StepStats run(int i, bool wanted, CombinedStep* combined = nullptr) {
    torch::manual_seed(100 + i);
    datasets::Batch b;
    // OptimizerPtr on the device: a copy from pageable host memory would itself
    // synchronise (gpu_test counts synchronisations).
    b.images = torch::randn({kBatch, built.shape.channels, built.shape.height, built.shape.width},
                            torch::TensorOptions().device(device_));
    b.labels =
        torch::randint(0, 10, {kBatch}, torch::TensorOptions().dtype(torch::kLong).device(device_));
    StepStats s;
    // Accumulating: the batch's rows, in order, as micro-batches.
    const int64_t micro = kBatch / accumulation_;
    std::vector<datasets::Batch> parts;
    for (int64_t j = 0; j < accumulation_; ++j) {
      parts.push_back({b.images.narrow(0, j * micro, micro), b.labels.narrow(0, j * micro, micro)});
    }
    size_t given = 1;
    const NextMicroBatch more = [&]() -> std::optional<datasets::Batch> {
      if (static_cast<int64_t>(given) >= available_) return std::nullopt;
      return parts[given++];
    };
    const CombinedStep c = step->run(
        accumulation_ > 1 ? parts[0] : b, 0.01, [] { return 0.0; }, s, wanted, more);
    if (combined) *combined = c;
    return s;
  }

  ModelAndData built;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<TrainState> state;
  std::unique_ptr<DistributedStep> dist;
  std::unique_ptr<Step> step;

 private:
  torch::Device device_;
  int64_t accumulation_;
  int64_t available_;
};

/// Fills the first variable's gradient with Inf on the step that starts at
/// global step `at`.
inline GradientFault inf_at(int64_t at) {
  return [at](int64_t step, const std::vector<optim::Variable>& vars) {
    if (step != at) return;
    torch::NoGradGuard no_grad;
    vars.front().var.mutable_grad().fill_(std::numeric_limits<float>::infinity());
  };
}

}  // namespace fastnn::train::testing
