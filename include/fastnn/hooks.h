// Training hooks (TF's SessionRunHook, as FastNN selects them by name in
// `hooks=`): called at the start, after every step, and at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fastnn {
struct HParams;
}

namespace fastnn::train {

/// Wall-clock spans of one step, seconds since the start of training.
struct StepSpans {
  double input_begin = 0, input_end = 0;
  double forward_end = 0, backward_end = 0, optimizer_end = 0;
};

/// What a hook sees after each step.
struct StepStats {
  /// Global step after this update.
  int64_t global_step = 0;
  /// Total loss (cross-entropy + regularization) of the batch.
  double loss = 0;
  /// Top-1 accuracy on the training batch.
  double accuracy = 0;
  double learning_rate = 0;
  int64_t batch_samples = 0;
  /// Global norm of the gradients (unscaled, after weight decay, before
  /// clipping); Inf or NaN when they overflowed.
  double gradient_norm = 0;
  /// Loss scale used for this step's backward (1 without loss scaling).
  double loss_scale = 1;
  /// The update was skipped: dynamic loss scaling met Inf/NaN gradients.
  bool skipped = false;
  /// On a step ProfilerHook profiles: LibTorch's operator-level trace of
  /// forward, backward and optimizer (Chrome trace JSON, times relative to
  /// spans.input_end). Empty otherwise.
  std::string op_trace;
  StepSpans spans;
};

/// What hooks can ask of the training loop.
class TrainControl {
 public:
  virtual ~TrainControl() = default;
  virtual const HParams& hparams() const = 0;
  virtual int64_t global_step() const = 0;
  /// The step training is expected to end at (stop_at_step, or the end of
  /// num_epochs when that comes first); -1 when unknown.
  virtual int64_t final_step() const = 0;
  /// Writes a checkpoint now (no-op without train_dir); returns its path.
  virtual std::string save_checkpoint() = 0;
  virtual void request_stop(const std::string& why) = 0;
};

class Hook {
 public:
  virtual ~Hook() = default;
  virtual void begin(TrainControl&) {}
  virtual void after_step(TrainControl&, const StepStats&) {}
  virtual void end(TrainControl&) {}
};

/// The hooks named in hp.hooks (comma list, case-insensitive), in order.
/// Throws ConfigError for an unknown name, listing the valid ones.
std::vector<std::unique_ptr<Hook>> make_hooks(const HParams& hp);

/// True when ProfilerHook is selected and profiles the step that ends at
/// `global_step` (profile_every_n_iters, on task profile_at_task).
bool profiles_step(const HParams& hp, int64_t global_step);

/// Names make_hooks accepts.
std::vector<std::string> hook_names();

}  // namespace fastnn::train
