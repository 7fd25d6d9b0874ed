// Training hooks (TF's SessionRunHook, as FastNN selects them by name in
// `hooks=`): called at the start, before and after every step, at the end
// of a finished run, and after any run. The trainer adds its own hooks
// (evaluation, metrics.json, the run's statistics) behind the named ones.
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
  /// False when this step left its loss, accuracy and gradient norm on the
  /// device (they read 0 here). A GPU run reads them only on the steps a
  /// hook asks for (Hook::needs_metrics), since each read makes the host
  /// wait for the GPU; an Inf/NaN on the other steps is kept as a device
  /// flag and stops the run at the next read. Always true on the CPU.
  bool metrics_read = true;
  StepSpans spans;
};

/// How a run ended, for the hooks that report it.
struct RunSummary {
  /// The process exit code (0, 130, 143).
  int exit_code = 0;
  std::string stop_reason;
  /// Global step when the run started (after any restore) and at its end.
  int64_t start_step = 0;
  int64_t final_step = 0;
  /// Images trained on by this run (all workers), and the wall time of
  /// its steps (up to the last step, before the final checkpoint and
  /// evaluation).
  int64_t samples = 0;
  double wall_secs = 0;
  /// Time spent waiting for the input pipeline.
  double data_wait_secs = 0;
  /// Loss and accuracy of the last step (0 when no step ran).
  double loss = 0;
  double accuracy = 0;
  /// The checkpoint written because of a stop signal, if any.
  std::string saved_checkpoint;
};

/// What hooks can ask of the training loop.
class TrainControl {
 public:
  virtual ~TrainControl() = default;
  virtual const HParams& hparams() const = 0;
  /// This worker's rank (0 on one process).
  virtual int rank() const = 0;
  /// This process writes train_dir: rank 0, with a train_dir set.
  virtual bool writes_train_dir() const = 0;
  /// Seconds since training started: the clock of StepSpans.
  virtual double now() const = 0;
  virtual int64_t global_step() const = 0;
  /// The step training is expected to end at (stop_at_step, or the end of
  /// num_epochs when that comes first); -1 when unknown.
  virtual int64_t final_step() const = 0;
  /// Writes a checkpoint now (no-op without train_dir); returns its path.
  virtual std::string save_checkpoint() = 0;
  virtual void request_stop(const std::string& why) = 0;
  /// A stop every worker of the job must make at the same step (a decision
  /// from an evaluation: stop_at_accuracy, early stopping). On one process
  /// request_stop; across workers it travels with the stop flags of the
  /// next step that agrees on stopping (every step on the CPU), as a
  /// graceful stop of the job does, and every worker stops after that step.
  virtual void request_job_stop(const std::string& why) { request_stop(why); }
};

class Hook {
 public:
  virtual ~Hook() = default;
  virtual void begin(TrainControl&) {}
  /// Before the step that will end at global_step() + 1 fetches its batch.
  virtual void before_step(TrainControl&) {}
  virtual void after_step(TrainControl&, const StepStats&) {}
  /// Whether after_step needs the loss, accuracy and gradient norm of the
  /// step that will end at `global_step` (StepStats::metrics_read). The
  /// default, every step, costs a GPU run one host synchronisation a step.
  virtual bool needs_metrics(const TrainControl&, int64_t /*global_step*/) const { return true; }
  /// The run finished (exit 0): e.g. the final checkpoint.
  virtual void end(TrainControl&) {}
  /// After every run that reaches the end of the loop, finished or
  /// stopped by a signal, after end().
  virtual void after_run(TrainControl&, const RunSummary&) {}
};

/// The hooks named in hp.hooks (comma list, case-insensitive), in order.
/// Throws ConfigError for an unknown name, listing the valid ones.
std::vector<std::unique_ptr<Hook>> make_hooks(const HParams& hp);

/// Names make_hooks accepts.
std::vector<std::string> hook_names();

}  // namespace fastnn::train
