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
#include <stdexcept>
#include <string>
#include <vector>

#include "fastnn/hooks.h"
#include "fastnn/pipeline.h"
#include "models/classifier.h"
#include "src/optim/optimizers.h"
#include "src/train/device.h"
#include "src/train/distributed_step.h"
#include "src/train/failpoints.h"
#include "src/train/loss_scale.h"
#include "src/train/mixup.h"
#include "src/train/train_state.h"

namespace fastnn::train {

struct StepOptions {
  /// TF-slim's label_smoothing. Default: 0.
  double label_smoothing = 0;
  /// Mixup / cutmix of each batch (timm's batch mode). Default: off.
  MixupOptions mixup;
  /// Auxiliary head weight in the loss (TF-slim: 0.4).
  double aux_loss_weight = 0.4;
  /// L2 weight decay on the model's regularized weights. Default: 0 = off.
  double weight_decay = 0;
  /// The fused L2-and-norm pass on the CPU (fused_gradients.h); the key
  /// fused_kernels.
  bool fused_kernels = true;
  /// Clip gradients to this global norm. Default: off.
  std::optional<double> max_gradient_norm;
  /// data_format=NHWC: images go in channels-last.
  bool channels_last = false;
  Autocast autocast = Autocast::kOff;
  /// Read the step's numbers to the host every step (the CPU, where a read
  /// is free). False (CUDA): only steps run with metrics_wanted read, unless
  /// clipping, dynamic loss scaling or a collective need the numbers anyway;
  /// the other steps apply their update and keep "Inf/NaN seen, first at
  /// step N" on the device for the next read.
  bool read_every_step = true;
  /// gradient_accumulation_steps: micro-batches per optimizer step; their
  /// gradients are summed (each loss divided by this), and averaged across
  /// workers once, after the last backward (DDP's no_sync).
  int64_t accumulation_steps = 1;
  /// Distributed: this worker asks the job to stop (TrainControl::
  /// request_job_stop); sent with the stop flags of every step. May be
  /// empty.
  std::function<bool()> stop_requested;
  /// One process: true when a stop signal ends an accumulated step between
  /// its micro-batches (run() then throws StoppedInsideStep). May be empty.
  std::function<bool()> stop_inside_step;
};

/// The next micro-batch of the step being accumulated, on the training
/// device; nullopt when the input ended.
using NextMicroBatch = std::function<std::optional<datasets::Batch>()>;

/// The input ended inside an accumulated step: `micro_batches` of it were
/// consumed, none applied (the weights are those of the last full step).
struct InputEndedInsideStep : std::runtime_error {
  explicit InputEndedInsideStep(int64_t micro_batches)
      : std::runtime_error("the input ended after " + std::to_string(micro_batches) +
                           " micro-batch(es) of an accumulated step"),
        micro_batches(micro_batches) {}
  int64_t micro_batches;
};

/// A stop signal arrived between the micro-batches of an accumulated step
/// (one process): `micro_batches` of it were drawn, none applied, and the
/// input position stays at the step's start, so a resumed run draws them
/// again.
struct StoppedInsideStep : std::runtime_error {
  explicit StoppedInsideStep(int64_t micro_batches)
      : std::runtime_error("stopped after " + std::to_string(micro_batches) +
                           " micro-batch(es) of an accumulated step"),
        micro_batches(micro_batches) {}
  int64_t micro_batches;
};

/// What settle() found of the last step.
struct LastStepMetrics {
  /// The last step had left its numbers on the device; loss and accuracy
  /// are now read.
  bool read = false;
  double loss = 0;
  double accuracy = 0;
};

/// A failpoint run on the final gradients (src/train/failpoints.h).
using failpoints::GradientFault;

/// Every number a step needs on the host, left on the training device
/// (float64) and read in one copy, only on the steps that read.
struct DeviceScalars {
  /// StepHead's slots (distributed_step.h): [loss × samples, correct,
  /// samples] from this worker, or, across workers, the summed head with
  /// the stop flags.
  torch::Tensor head;
  /// The global gradient norm after averaging and L2 (drives the Inf/NaN
  /// test, clipping and the loss scaler); 0-d.
  torch::Tensor gradient_norm;
  /// Each regularized weight's sum(w²), for the logged L2 term.
  std::vector<torch::Tensor> l2_sums;
  /// This worker's images.
  int64_t samples = 0;

  /// The values in read order: head, norm, L2 sums.
  std::vector<torch::Tensor> values() const;
};

class Step {
 public:
  /// Every reference must outlive the step; `dist` is null on one process.
  Step(StepOptions options, models::ClassifierImpl& model, optim::Optimizer& optimizer,
       LossScaler& scaler, TrainState& state, DistributedStep* dist, GradientFault fault = {});

  /// One update from `batch` (and, with accumulation_steps = K > 1, the
  /// K - 1 micro-batches `more` returns) at `learning_rate`; state.step
  /// advances by one and state.batches_consumed by the micro-batches
  /// used. Throws InputEndedInsideStep when `more` runs dry. Fills `s` (everything but the input
  /// spans, which the caller measured); `now` is the spans' clock. Returns
  /// what the workers agreed on (a stop, the combined metrics); on one
  /// process, its default.
  /// `metrics_wanted`: this step must read its numbers (see
  /// StepOptions::read_every_step). Throws DivergedError when an earlier
  /// step that did not read them had Inf/NaN.
  CombinedStep run(const datasets::Batch& batch, double learning_rate,
                   const std::function<double()>& now, StepStats& s, bool metrics_wanted = true,
                   const NextMicroBatch& more = {});

  /// After the last step: reads what the steps since the last read left on
  /// the device. Throws DivergedError when one of them had Inf/NaN.
  LastStepMetrics settle();

  /// Whether the step that ends at global step `next` reads its numbers:
  /// asked for, or every step (the CPU), or needed by dynamic loss scaling
  /// (its one flag a step, as PyTorch's GradScaler), or a distributed
  /// agreement on stopping (every kStopAgreementSteps steps).
  bool reads(int64_t next, bool metrics_wanted) const;

 private:
  /// Phases of run(), in order. forward_loss adds the batch's numbers to
  /// `d`; accumulate runs a micro-batch's backward with no reduction.
  /// `batch_number`: the micro-batch's input position (seeds mixup).
  torch::Tensor forward_loss(const datasets::Batch& batch, int64_t batch_number, DeviceScalars& d);
  void accumulate(const torch::Tensor& loss);
  /// backward of `loss` (÷ accumulation_steps) × the loss scale.
  void backward(const torch::Tensor& loss, double loss_scale);
  void backward_and_reduce(const torch::Tensor& loss, StepStats& s, DeviceScalars& d);
  void finish_gradients(StepStats& s, DeviceScalars& d);
  /// Dynamic loss scaling's decision, and whether the numbers read allow
  /// the update (a step that read them).
  bool should_apply(StepStats& s);
  /// Clipping (by `read_norm` when read, else on the device by `norm`),
  /// the optimizer's update and the moving averages: their one call site.
  void apply_update(double learning_rate, const torch::Tensor& norm, double read_norm, bool read);
  /// The host's copy of `d` (one read) into `s`; the combined result.
  CombinedStep read_numbers(const DeviceScalars& d, StepStats& s, bool agreement);
  /// Remembers `d` unread, with an Inf/NaN flag kept on the device.
  CombinedStep keep_unread(DeviceScalars d, StepStats& s);

  StepOptions options_;
  models::ClassifierImpl& model_;
  optim::Optimizer& optimizer_;
  LossScaler& scaler_;
  TrainState& state_;
  DistributedStep* dist_;
  GradientFault fault_;
  std::vector<torch::Tensor> regularized_;
  /// Global step of the first unread step whose loss or gradient norm was
  /// Inf/NaN, or -1 (float64 scalar on the device; undefined until needed).
  torch::Tensor first_nonfinite_;
  /// The last unread step's numbers.
  std::optional<DeviceScalars> unread_;
};

}  // namespace fastnn::train
