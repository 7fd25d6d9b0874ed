// The training loop: builds everything once from the hyperparameters, then
// runs steps until a hook requests a stop, the data runs out, or a signal
// arrives. Rank 0 of a single process for now.
#pragma once

#include <memory>
#include <string>

#include "fastnn/hparams.h"

namespace fastnn::train {

class Trainer {
 public:
  /// Resolves every name (model, dataset, preprocessing, optimizer, hooks)
  /// and builds the model; throws ConfigError / DataError before any work.
  explicit Trainer(HParams hp);
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
