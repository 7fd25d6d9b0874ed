// Loss scaling for mixed precision: the loss is multiplied by a scale before
// backward so small fp16 gradients do not flush to zero, and the gradients
// are divided by it again before the optimizer. The dynamic policy is TF's
// (and PyTorch's GradScaler's): a step whose gradients hold an Inf or NaN is
// skipped and the scale backed off; after growth_interval finite steps in
// a row the scale grows.
#pragma once

#include <cstdint>

namespace fastnn::train {

struct LossScaleOptions {
  /// Dynamic scaling; false: the scale stays initial_scale and a
  /// non-finite gradient is divergence.
  bool dynamic = false;
  /// Default: TF's dynamic loss scale starts at 2^15.
  double initial_scale = 32768.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  /// Finite steps in a row before the scale grows. Default: TF's 2000.
  int64_t growth_interval = 2000;
  /// The scale never falls below this.
  double min_scale = 1.0;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleOptions options);

  double scale() const { return scale_; }
  bool dynamic() const { return options_.dynamic; }

  /// Records the outcome of one step's gradients; returns true when the
  /// step may be applied. Dynamic: a non-finite step backs the scale off
  /// and returns false. Static: always true (the caller treats non-finite
  /// gradients as divergence).
  bool update(bool grads_finite);

  /// Finite steps since the last change of the scale.
  int64_t good_steps() const { return good_steps_; }
  /// Steps skipped so far because of non-finite gradients.
  int64_t skipped_steps() const { return skipped_; }

  /// Checkpoint state: scale and good_steps.
  void restore(double scale, int64_t good_steps);

 private:
  LossScaleOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace fastnn::train
