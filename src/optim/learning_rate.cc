#include "src/optim/learning_rate.h"

#include <algorithm>
#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"

namespace fastnn::optim {

double learning_rate_at(const ScheduleOptions& o, int64_t step) {
  if (o.type == "fixed") return o.learning_rate;
  double base = o.learning_rate;
  if (o.warmup_steps > 0 && step < o.warmup_steps) {
    const double w = static_cast<double>(o.warmup_steps);
    base = o.learning_rate * std::pow(0.01, (w - step) / w);
  }
  if (o.type == "cosine") {
    if (o.warmup_steps > 0 && step < o.warmup_steps) return base;
    const double span = std::max<int64_t>(1, o.total_steps - o.warmup_steps);
    const double t = std::min<double>(step - o.warmup_steps, span);
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * t / span));
    return base * ((1.0 - o.alpha) * cosine + o.alpha);
  }
  if (o.decay_steps <= 0 || step < o.decay_start) return base;
  const int64_t since = step - o.decay_start;
  if (o.type == "exponential") {
    return base * std::pow(o.decay_factor,
                           std::floor(static_cast<double>(since) /
                                      static_cast<double>(o.decay_steps)));
  }
  const double frac =
      1.0 - static_cast<double>(std::min(since, o.decay_steps)) /
                static_cast<double>(o.decay_steps);
  return (base - o.end_learning_rate) * frac + o.end_learning_rate;
}

ScheduleOptions schedule_from_hparams(const HParams& hp,
                                      int64_t samples_per_epoch,
                                      int64_t num_workers) {
  ScheduleOptions o;
  o.type = hp.learning_rate_decay_type;
  o.learning_rate = hp.learning_rate;
  o.end_learning_rate = hp.end_learning_rate;
  o.decay_factor = hp.learning_rate_decay_factor;
  o.warmup_steps = hp.warmup_scheme == "t2t" ? hp.warmup_steps : 0;
  o.total_steps = hp.stop_at_step;
  o.alpha = hp.min_lr_ratio;
  const int64_t s = hp.stop_at_step;
  if (hp.num_epochs_per_decay) {
    const double per_step =
        static_cast<double>(hp.batch_size) * std::max<int64_t>(1, num_workers);
    o.decay_start = 0;
    o.decay_steps = static_cast<int64_t>(samples_per_epoch *
                                         *hp.num_epochs_per_decay / per_step);
    if (o.decay_steps <= 0 && o.type != "fixed" && o.type != "cosine") {
      throw ConfigError(hp.where("num_epochs_per_decay") +
                        ": num_epochs_per_decay: gives decay_steps = 0 "
                        "(samples per epoch too small for the batch size)");
    }
  } else if (hp.decay_scheme == "luong5" || hp.decay_scheme == "luong10") {
    o.decay_start = s / 2;
    o.decay_steps = (s - o.decay_start) / (hp.decay_scheme == "luong5" ? 5 : 10);
  } else if (hp.decay_scheme == "luong234") {
    o.decay_start = s * 2 / 3;
    o.decay_steps = (s - o.decay_start) / 4;
  } else {
    o.decay_start = s;
    o.decay_steps = 0;
  }
  return o;
}

}  // namespace fastnn::optim
