// Learning-rate schedules with FastNN's and TF-slim's exact semantics
// (docs/hyperparameters.md), plus a linear warmup (Goyal et al., 2017). Pure
// functions of the global step.
#pragma once

#include <cstdint>
#include <string>

namespace fastnn::optim {

/// Everything a schedule needs, resolved once before training.
struct ScheduleOptions {
  /// "fixed", "exponential", "polynomial" or "cosine".
  std::string type = "exponential";
  double learning_rate = 0.01;
  double end_learning_rate = 1e-4;
  double decay_factor = 0.94;
  /// Warmup over the first `warmup_steps` steps (none when 0; "fixed"
  /// ignores it): "t2t" (FastNN's) replaces the peak by
  /// lr * 0.01^((W - s) / W); "linear" multiplies the schedule's value by
  /// (s + 1) / W, so the first step gets 1/W of it and step W - 1 all of it.
  std::string warmup = "t2t";
  int64_t warmup_steps = 0;
  /// Decay starts at this step and steps every `decay_steps`; decay_steps
  /// 0 means no decay (FastNN's default decay_scheme '').
  int64_t decay_start = 0;
  int64_t decay_steps = 0;
  /// Cosine: total steps (the run's horizon) and the floor ratio
  /// (min_lr_ratio); the cosine starts after the warmup.
  int64_t total_steps = 0;
  double alpha = 0.0;
};

/// The learning rate of the update that follows `step` completed steps
/// (the first update is step 0).
double learning_rate_at(const ScheduleOptions& o, int64_t step);

/// TF-slim's rounding of an epoch count into steps:
/// int(samples_per_epoch * epochs / batch). `batch` is the job's (global)
/// batch per optimizer step: batch_size × gradient_accumulation_steps ×
/// workers. 0 when samples_per_epoch is unknown (<= 0).
int64_t epochs_to_steps(double epochs, int64_t samples_per_epoch, int64_t batch);

}  // namespace fastnn::optim
