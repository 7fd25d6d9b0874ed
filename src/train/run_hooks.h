// The trainer's own hooks, added behind the ones named in `hooks=`: they
// are part of every run, so they are not in the name table. Each gets what
// it reports on when it is built.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fastnn/hooks.h"
#include "fastnn/pipeline.h"
#include "src/optim/optimizers.h"
#include "src/train/best_checkpoints.h"
#include "src/train/builder.h"
#include "src/train/evaluator.h"
#include "src/train/loss_scale.h"

namespace fastnn::train {

/// The input pipeline's counters at the time of the call.
using PipelineStatsFn = std::function<datasets::PipelineStats()>;

/// print_model_statistics, log_trainable_vars_statistics and
/// log_optimizer_vars_statistics: tables printed (rank 0) when training
/// begins.
std::unique_ptr<Hook> make_statistics_hook(models::ClassifierImpl& model,
                                           optim::Optimizer& optimizer);

/// stop_at_accuracy's outcome: the first evaluation reaching it.
struct TargetReached {
  /// -1: not reached.
  int64_t step = -1;
  double accuracy = 0;
  std::string split;
  /// Seconds from the start of this run's first step to the end of
  /// `step`, evaluations during training excluded.
  double train_secs = 0;
};

/// Evaluation during training, on one or more splits (validation and
/// eval_split_name), each a ModelAndData sharing the trained model: every
/// eval_every_n_iters steps (> 0) and once more at the end of a finished
/// run unless that step was just evaluated; prints "eval <split> at
/// global_step N: ...". Each split's decoded batches are kept between
/// evaluations when they fit (EvalCache). After each evaluation it decides
/// what the evaluations decide: stop_at_accuracy (on eval_split_name's
/// accuracy), keep_best_checkpoints and early_stopping_patience (on the
/// validation split's, when evaluated, else eval_split_name's); a stop
/// goes through TrainControl::request_job_stop.
class EvaluationHook : public Hook {
 public:
  /// `swap_averages` (may be empty) exchanges the weights with their
  /// moving averages: called before and after each evaluation, so that
  /// with moving_average_decay the averages are evaluated, as
  /// eval_image_classifier evaluates them. `state` (may be empty without
  /// keep_best_checkpoints) is the training state as a checkpoint holds it.
  EvaluationHook(const HParams& hp, std::vector<ModelAndData> evals,
                 std::function<bool()> swap_averages = {}, std::function<TensorMap()> state = {});
  void begin(TrainControl& c) override;
  /// Evaluation steps read the step's numbers first: an Inf/NaN stops
  /// the run before the weights are evaluated.
  bool needs_metrics(const TrainControl& c, int64_t global_step) const override;
  void after_step(TrainControl& c, const StepStats& s) override;
  void end(TrainControl& c) override;
  /// The latest result of each split, in the order of `evals`; empty
  /// before the first evaluation.
  const std::vector<EvalResult>& last() const { return last_; }
  /// Seconds spent in evaluations during training (best checkpoints
  /// written included).
  double eval_secs() const { return eval_secs_; }
  const TargetReached& target() const { return target_; }
  /// keep_best_checkpoints or early_stopping_patience: the history (null
  /// otherwise, and before begin()).
  const EvalHistory* history() const { return history_.get(); }
  /// early_stopping_patience ended the run.
  bool early_stopped() const { return early_stopped_; }

 private:
  /// Evaluates every split; false when a stop signal cut it short.
  bool evaluate(int64_t step);
  /// What the evaluation at `step` decides; `ending`: the evaluation at
  /// the end of a finished run, which records but stops nothing.
  void judge(TrainControl& c, int64_t step, bool ending);
  /// The result keep_best_checkpoints and early stopping rank by.
  const EvalResult* ranked(const std::vector<EvalResult>& results) const;
  const HParams& hp_;
  std::vector<ModelAndData> evals_;
  std::vector<EvalCache> caches_;
  std::function<bool()> swap_averages_;
  std::function<TensorMap()> state_;
  int64_t evaluated_step_ = -1;
  std::vector<EvalResult> last_;
  double eval_secs_ = 0;
  /// Training seconds (evaluations excluded) at the end of the last step.
  double train_secs_ = 0;
  TargetReached target_;
  std::unique_ptr<EvalHistory> history_;
  bool early_stopped_ = false;
};

/// The splits evaluation during training covers: "validation" when the
/// dataset has one (held out or its own), then eval_split_name. With
/// result_format set and eval_every_n_iters 0, a missing eval_split_name is
/// left out instead of being an error; result_format=smac without a
/// validation split is a ConfigError.
std::vector<std::string> evaluation_splits(const HParams& hp);

/// What result_format prints: the outcome of a run (or of a failure before
/// it started) and the latest evaluation of each split.
struct RunResult {
  int exit_code = 0;
  double wall_secs = 0;
  int64_t final_step = 0;
  int64_t seed = 0;
  /// The last step's training loss; NaN when no step ran.
  double train_loss = 0;
  std::vector<EvalResult> evals;
};

/// result_format's text (ends with a newline; empty for "none"):
///  smac: "Result of this algorithm run: SAT|UNSAT, <runtime s>, <steps>,
///         <1 - validation accuracy>, <seed>" (UNSAT: exit code not 0, or
///         diverged; quality 1 without a validation result);
///  tsv:  "name<TAB>value" lines: status, exit_code, runtime_secs,
///         final_step, seed, train_loss, then <split>_accuracy,
///         <split>_recall_5, <split>_loss, <split>_samples per split.
std::string format_result(const std::string& format, const RunResult& r);

/// Prints format_result(hp.result_format, r) on stdout, the first call of
/// the process only: the metrics hook reports a run that reached its loop,
/// train_image_classifier a failure before that.
void print_result(const HParams& hp, const RunResult& r);

/// The run's closing lines: "Stopped at global_step N: <why>; ...", the
/// checkpoint a signal made it write, and the records skipped.
std::unique_ptr<Hook> make_run_report_hook(PipelineStatsFn stats);

/// train_dir/metrics.json (rank 0): final step, loss, accuracy, images/sec,
/// wall time, data wait, skipped records by kind, loss scale, the last
/// evaluation of each split (`eval` may be null) and the exit status; and
/// on rank 0 result_format's text on stdout.
std::unique_ptr<Hook> make_metrics_hook(PipelineStatsFn stats, const LossScaler& scaler,
                                        const EvaluationHook* eval);

}  // namespace fastnn::train
