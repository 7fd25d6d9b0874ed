// Learning-rate schedules with FastNN's and TF-slim's exact semantics
// (reference/fastnn.md §4). Pure functions of the global step.
#pragma once

#include <cstdint>
#include <string>

namespace fastnn {
struct HParams;
}

namespace fastnn::optim {

/// Everything a schedule needs, resolved once before training.
struct ScheduleOptions {
  /// "fixed", "exponential", "polynomial" or "cosine".
  std::string type = "exponential";
  double learning_rate = 0.01;
  double end_learning_rate = 1e-4;
  double decay_factor = 0.94;
  /// FastNN's t2t warmup when > 0: lr * 0.01^((W - s) / W) for s < W.
  int64_t warmup_steps = 0;
  /// Decay starts at this step and steps every `decay_steps`; decay_steps
  /// 0 means no decay (FastNN's default decay_scheme '').
  int64_t decay_start = 0;
  int64_t decay_steps = 0;
  /// Cosine: total steps and the floor ratio (min_lr_ratio).
  int64_t total_steps = 0;
  double alpha = 0.0;
};

/// The learning rate at global step `step`.
double learning_rate_at(const ScheduleOptions& o, int64_t step);

/// Resolves hp into ScheduleOptions. FastNN semantics (decay_scheme counted
/// from stop_at_step) unless num_epochs_per_decay is set, in which case
/// TF-slim's decay_steps = int(samples_per_epoch * epochs_per_decay /
/// (batch_size * num_workers)) applies from step 0.
ScheduleOptions schedule_from_hparams(const HParams& hp,
                                      int64_t samples_per_epoch,
                                      int64_t num_workers);

}  // namespace fastnn::optim
