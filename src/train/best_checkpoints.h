// keep_best_checkpoints and early_stopping_patience: the history of the
// evaluations during training by one accuracy, the best weights kept as
// best.ckpt-<step> files beside the model.ckpt-<step> ones (a name that
// neither max_to_keep's pruning nor resuming ever looks at), and the
// evaluations since the last improvement. Persisted in
// train_dir/best_checkpoints.json, so that a resumed run goes on from them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/train/checkpoint.h"

namespace fastnn::train {

struct BestCheckpoint {
  int64_t step = 0;
  double accuracy = 0;
  /// The file's name in the train_dir: best.ckpt-<step>.
  std::string file;
};

/// The name of the file the history is kept in, inside the train_dir.
inline constexpr const char* kBestCheckpointsFile = "best_checkpoints.json";

class EvalHistory {
 public:
  /// `dir` empty: nothing is read or written (a worker other than rank 0,
  /// or no train_dir), the history is kept in memory only. `keep`: the
  /// best checkpoints kept (0: none), by `metric` (e.g. "test_accuracy").
  /// A history in `dir` by another metric is set aside with a warning
  /// (its files stay).
  EvalHistory(std::string dir, int64_t keep, std::string metric);

  /// Forgets what a resumed run at global step `step` will do again: the
  /// evaluations after it, and their best checkpoints (files removed).
  /// At step 0 (a new run) an earlier run's history is set aside, its
  /// files left where they are.
  void resume_at(int64_t step);

  /// Records the evaluation at `step` (replacing one recorded there).
  /// When it ranks among the `keep` best (higher accuracy; on a tie the
  /// earlier step ranks first), writes best.ckpt-<step> from `tensors()`
  /// and removes the file it pushes out. Returns whether it improved on
  /// every earlier evaluation.
  bool add(int64_t step, double accuracy, const std::function<TensorMap()>& tensors);

  /// Evaluations since the best one (0 right after an improvement).
  int64_t evaluations_without_improvement() const;
  /// The best evaluation so far; step -1 before the first.
  int64_t best_step() const;
  double best_accuracy() const;
  /// The kept checkpoints, best first.
  const std::vector<BestCheckpoint>& best() const { return best_; }
  const std::string& metric() const { return metric_; }

 private:
  void write() const;
  std::string dir_;
  int64_t keep_;
  std::string metric_;
  /// (step, accuracy) in step order.
  std::vector<std::pair<int64_t, double>> evaluations_;
  std::vector<BestCheckpoint> best_;
};

}  // namespace fastnn::train
