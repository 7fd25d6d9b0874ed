// The training loop: builds everything once from the hyperparameters, then
// runs steps until a hook requests a stop, the data runs out, or a signal
// arrives; one process of a job (one worker of `cluster`), or the only one.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "fastnn/hparams.h"

namespace fastnn::dist {
struct ClusterSpec;
}  // namespace fastnn::dist

namespace fastnn::train {

class Trainer {
 public:
  /// Resolves every name (model, dataset, preprocessing, optimizer, hooks)
  /// and builds the model; throws ConfigError / DataError before any work.
  /// `cluster` places this process in the job (dist::resolve_cluster; a
  /// default ClusterSpec is a single process): rank 0 alone writes
  /// train_dir, and each worker reads its shard of the training data.
  /// `environment`: the process environment as main read it once
  /// (dist::process_environment); a distributed job's session settings
  /// (token, timeouts) come from it and `hp`, checked here.
  Trainer(HParams hp, const dist::ClusterSpec& cluster,
          const std::map<std::string, std::string>& environment);
  ~Trainer();

  /// Effective hyperparameters, dataset, model statistics (--dry_run).
  std::string describe() const;

  /// Trains. Returns the process exit code: 0 when finished, 130/143 when
  /// stopped by SIGINT/SIGTERM after writing a checkpoint. Throws
  /// DivergedError on a NaN/Inf loss, DataError on bad data.
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::train
