#include "src/train/loss_scale.h"

#include <algorithm>

namespace fastnn::train {

LossScaleOptions loss_scale_options(const HParams& hp, bool fp16_autocast) {
  LossScaleOptions o;
  o.dynamic = hp.loss_scaling == "dynamic" || (hp.loss_scaling == "auto" && fp16_autocast);
  if (o.dynamic) {
    // An explicit loss_scale is the dynamic policy's starting point.
    if (hp.sources.count("loss_scale")) o.initial_scale = hp.loss_scale;
  } else {
    o.initial_scale = hp.loss_scale;
  }
  return o;
}

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
