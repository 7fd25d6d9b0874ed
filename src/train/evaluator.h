// Evaluation of a checkpoint on a dataset split: exact counts over every
// record (no padded duplicates), top-1, top-5 and mean cross-entropy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fastnn/pipeline.h"
#include "src/train/device.h"
#include "src/train/moving_averages.h"

namespace fastnn::train {

struct EvalResult {
  std::string checkpoint;
  std::string split;
  int64_t global_step = 0;
  /// The checkpoint's moving averages (moving_average_decay) were used.
  bool moving_averages = false;
  int64_t samples = 0;
  int64_t top1_correct = 0;
  int64_t top5_correct = 0;
  double top1 = 0;
  double top5 = 0;
  double loss = 0;
  double wall_secs = 0;
  /// Per class (index = label): correct top-1 predictions and samples.
  std::vector<int64_t> class_correct, class_total;
  /// Class names from labels.txt (may be empty).
  std::vector<std::string> class_names;
  /// A stop signal ended the pass early: the counts cover part of the
  /// split only and are no result.
  bool stopped = false;
};

struct ModelAndData;

/// The input of one split evaluated again and again (evaluation during
/// training): the first pass reads it through a pipeline and keeps its
/// batches on the host, decoded and preprocessed (evaluation's
/// preprocessing has no random part), while they fit in `budget_bytes`;
/// later passes use them, with no pipeline and no decoding. A split that
/// does not fit is read by a pipeline every pass (its start-up is a few
/// threads, small beside decoding such a split).
struct EvalCache {
  /// The most bytes of images and labels kept; 0 keeps nothing.
  int64_t budget_bytes = 0;
  /// `batches` hold a whole pass.
  bool complete = false;
  /// The split did not fit (or a pass was cut short): never kept.
  bool too_large = false;
  int64_t bytes = 0;
  std::vector<datasets::Batch> batches;
};

/// Evaluation caches' budget: an eighth of this machine's memory.
int64_t default_eval_cache_budget();

/// How a split is evaluated.
struct EvalOptions {
  /// The split's input: every record once, eval_batch_size images a batch
  /// (the builder's pipeline_options for evaluation).
  datasets::PipelineOptions pipeline;
  /// data_format=NHWC: each batch goes channels-last, as the model's
  /// weights (apply_data_format).
  bool channels_last = false;
  /// Which weights evaluate() restores (moving_average_decay).
  MovingAverages moving_averages = MovingAverages::kAuto;
  /// At most this many batches (max_num_batches); 0: the whole split.
  int64_t max_batches = 0;
};

/// Evaluates `built.model` as it is (eval mode for the pass, then back)
/// on built.dataset; used by evaluate() and by evaluation during training
/// (with a `cache` kept between passes).
/// Checks stop_signal() between batches (EvalResult::stopped).
EvalResult evaluate_model(const EvalOptions& options, const ModelAndData& built,
                          EvalCache* cache = nullptr);

/// Restores the checkpoint file `checkpoint` (resolve_checkpoint's; its
/// moving averages as options.moving_averages says) into `built.model`, a network built
/// for the evaluation split (apply_data_format done), and evaluates it on
/// the device training would use (a GPU when present, device=cpu to keep it
/// off one).
EvalResult evaluate(const EvalOptions& options, const DeviceOptions& device,
                    const ModelAndData& built, const std::string& checkpoint);

/// The evaluation loop's settings.
struct EvalLoopOptions {
  /// Seconds between two looks for a new checkpoint (eval_interval_secs).
  int64_t interval_secs = 0;
  /// > 0: the loop ends after this many seconds without a new checkpoint
  /// (eval_timeout_secs).
  int64_t timeout_secs = 0;
  /// The summaries' folder (eval_dir); empty: train_dir/eval_<split>.
  std::string summary_dir;
};

/// Adds one evaluation's TensorBoard scalars (eval/accuracy, eval/recall_5,
/// eval/loss at its global_step) to the event file in `dir`.
void write_eval_summary(const std::string& dir, const EvalResult& result);

/// Evaluates one checkpoint file of the train_dir (the builder's
/// evaluate_checkpoint).
using EvaluateCheckpoint = std::function<EvalResult(const std::string& checkpoint)>;

/// TF-slim's evaluation loop over a train_dir: evaluates its latest
/// checkpoint with `evaluate` whenever a new one appears (checking every
/// options.interval_secs), calls `report` with each result and writes
/// accuracy, recall_5 and loss to TensorBoard events in
/// train_dir/eval_<split>/ (when it cannot be written: a warning, and the
/// loop goes on without them). Says what it waits for, at once before the
/// first checkpoint and then once a minute. Ends when the training run
/// has ended, whatever the end (metrics.json records it and no trainer
/// holds train_dir's lock: a resumed run is not taken for its
/// predecessor), saying how it ended: 0 after evaluating its last
/// checkpoint, 3 when it wrote none. Also returns 0 after
/// options.timeout_secs (> 0) without a new checkpoint, and 130/143 on
/// SIGINT/SIGTERM.
int evaluation_loop(const EvalLoopOptions& options, const std::string& train_dir,
                    const EvaluateCheckpoint& evaluate,
                    const std::function<void(const EvalResult&)>& report);

/// The result as one JSON object (no newline).
std::string eval_result_json(const EvalResult& r);

}  // namespace fastnn::train
