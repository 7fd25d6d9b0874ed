// One training step as one unit: forward (under autocast), loss, backward
// with the gradients averaged across workers while it runs, loss-scale
// check, L2 weight decay, clipping, the optimizer's update and the moving
// averages. The loop around it (Trainer::run) fetches batches and calls
// the hooks; everything the step needs is built once, before the loop.
//
// What depends on the device or the job stays behind small seams: the
// autocast mode (Autocast, from device.h), and gradient reduction
// (DistributedStep, absent on one process; Gloo or NCCL behind it). The
// batch arrives on the training device (DeviceFeed).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "fastnn/hooks.h"
#include "fastnn/pipeline.h"
#include "models/classifier.h"
#include "src/optim/optimizers.h"
#include "src/train/device.h"
#include "src/train/distributed_step.h"
#include "src/train/loss_scale.h"
#include "src/train/train_state.h"

namespace fastnn::train {

struct StepOptions {
  /// TF-slim's label_smoothing. Default: 0.
  double label_smoothing = 0;
  /// Auxiliary head weight in the loss (TF-slim: 0.4).
  double aux_loss_weight = 0.4;
  /// L2 weight decay on the model's regularized weights. Default: 0 = off.
  double weight_decay = 0;
  /// Clip gradients to this global norm. Default: off.
  std::optional<double> max_gradient_norm;
  /// data_format=NHWC: images go in channels-last.
  bool channels_last = false;
  Autocast autocast = Autocast::kOff;
};

/// Test-only fault: runs after the gradients are final, before the loss
/// scaler looks at them (FASTNN_FAULT_INF_GRAD_STEPS).
using GradientFault =
    std::function<void(int64_t step, const std::vector<optim::Variable>& vars)>;

/// FASTNN_FAULT_INF_GRAD_STEPS=s1,s2,...: fills the first variable's
/// gradient with Inf at those steps. Empty (no fault) when unset.
GradientFault gradient_fault_from_env();

class Step {
 public:
  /// Every reference must outlive the step; `dist` is null on one process.
  Step(StepOptions options, models::ClassifierImpl& model, optim::Optimizer& optimizer,
       LossScaler& scaler, TrainState& state, DistributedStep* dist,
       GradientFault fault = {});

  /// One update from `batch` at `learning_rate`; state.step and
  /// state.batches_consumed advance. Fills `s` (everything but the input
  /// spans, which the caller measured); `now` is the spans' clock. Returns
  /// what the workers agreed on (a stop, the combined metrics); on one
  /// process, its default.
  CombinedStep run(const datasets::Batch& batch, double learning_rate,
                   const std::function<double()>& now, StepStats& s);

 private:
  StepOptions options_;
  models::ClassifierImpl& model_;
  optim::Optimizer& optimizer_;
  LossScaler& scaler_;
  TrainState& state_;
  DistributedStep* dist_;
  GradientFault fault_;
  std::vector<torch::Tensor> regularized_;
};

}  // namespace fastnn::train
