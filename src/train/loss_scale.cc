#include "src/train/loss_scale.h"

#include <algorithm>

namespace fastnn::train {

LossScaler::LossScaler(LossScaleOptions options)
    : options_(options), scale_(options.initial_scale) {}

bool LossScaler::update(bool grads_finite) {
  if (!options_.dynamic) return true;
  if (!grads_finite) {
    scale_ = std::max(options_.min_scale, scale_ * options_.backoff_factor);
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, int64_t good_steps) {
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace fastnn::train
