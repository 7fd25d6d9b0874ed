// Evaluation of a checkpoint on a dataset split: exact counts over every
// record (no padded duplicates), top-1, top-5 and mean cross-entropy.
#pragma once

#include <cstdint>
#include <string>

#include "fastnn/hparams.h"

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
};

/// Evaluates `checkpoint_path` (a file, or a train_dir for its latest) on
/// hp.eval_split_name with hp.eval_batch_size.
EvalResult evaluate(const HParams& hp, const std::string& checkpoint_path);

/// The result as one JSON object (no newline).
std::string eval_result_json(const EvalResult& r);

}  // namespace fastnn::train
