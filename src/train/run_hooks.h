// The trainer's own hooks, added behind the ones named in `hooks=`: they
// are part of every run, so they are not in the name table. Each gets what
// it reports on when it is built.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "fastnn/hooks.h"
#include "fastnn/pipeline.h"
#include "src/optim/optimizers.h"
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

/// eval_every_n_iters > 0: evaluates `eval` (sharing the trained model)
/// every N steps and once more at the end of a finished run unless the
/// last step was just evaluated; prints "eval <split> at global_step N: ...".
class EvaluationHook : public Hook {
 public:
  EvaluationHook(const HParams& hp, Built eval);
  void begin(TrainControl& c) override;
  void after_step(TrainControl& c, const StepStats& s) override;
  void end(TrainControl& c) override;
  /// The latest result, if any.
  const std::optional<EvalResult>& last() const { return last_; }

 private:
  void evaluate(int64_t step);
  const HParams& hp_;
  Built eval_;
  int64_t start_step_ = 0;
  std::optional<EvalResult> last_;
};

/// The run's closing lines: "Stopped at global_step N: <why>; ...", the
/// checkpoint a signal made it write, and the records skipped.
std::unique_ptr<Hook> make_run_report_hook(PipelineStatsFn stats);

/// train_dir/metrics.json (rank 0): final step, loss, accuracy, images/sec,
/// wall time, data wait, skipped records by kind, loss scale, the last
/// evaluation (`eval` may be null) and the exit status.
std::unique_ptr<Hook> make_metrics_hook(PipelineStatsFn stats, const LossScaler& scaler,
                                        const EvaluationHook* eval);

}  // namespace fastnn::train
