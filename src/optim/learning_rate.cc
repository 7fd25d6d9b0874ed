#include "src/optim/learning_rate.h"

#include <algorithm>
#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"

namespace fastnn::optim {
namespace {

// The schedule without the linear warmup's factor: FastNN's t2t warmup
// (which replaces the peak), then the decay.
double decayed(const ScheduleOptions& o, int64_t step, bool warming) {
  double base = o.learning_rate;
  if (warming && o.warmup == "t2t") {
    const double w = static_cast<double>(o.warmup_steps);
    base = o.learning_rate * std::pow(0.01, (w - step) / w);
  }
  if (o.type == "cosine") {
    if (warming) return base;
    const double span = std::max<int64_t>(1, o.total_steps - o.warmup_steps);
    const double t = std::min<double>(step - o.warmup_steps, span);
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * t / span));
    return base * ((1.0 - o.alpha) * cosine + o.alpha);
  }
  if (o.decay_steps <= 0 || step < o.decay_start) return base;
  const int64_t since = step - o.decay_start;
  if (o.type == "exponential") {
    return base * std::pow(o.decay_factor, std::floor(static_cast<double>(since) /
                                                      static_cast<double>(o.decay_steps)));
  }
  const double frac = 1.0 - static_cast<double>(std::min(since, o.decay_steps)) /
                                static_cast<double>(o.decay_steps);
  return (base - o.end_learning_rate) * frac + o.end_learning_rate;
}

}  // namespace

double learning_rate_at(const ScheduleOptions& o, int64_t step) {
  if (o.type == "fixed") return o.learning_rate;
  const bool warming = o.warmup_steps > 0 && step < o.warmup_steps;
  const double lr = decayed(o, step, warming);
  if (warming && o.warmup == "linear") {
    return lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  return lr;
}

int64_t epochs_to_steps(double epochs, int64_t samples_per_epoch, int64_t batch) {
  if (samples_per_epoch <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(samples_per_epoch) * epochs /
                              static_cast<double>(std::max<int64_t>(1, batch)));
}

int64_t resolve_stop_at_step(const HParams& hp, int64_t samples_per_worker) {
  if (!stop_from_num_epochs(hp)) return hp.stop_at_step;
  const int64_t steps =
      epochs_to_steps(static_cast<double>(hp.num_epochs), samples_per_worker, hp.images_per_step());
  if (steps <= 0) {
    throw ConfigError(hp.where("num_epochs") + ": num_epochs: " + std::to_string(hp.num_epochs) +
                      " epochs of " + std::to_string(samples_per_worker) +
                      " samples per worker in steps of " + std::to_string(hp.images_per_step()) +
                      " images make no step; set stop_at_step");
  }
  return steps;
}

ScheduleOptions schedule_from_hparams(const HParams& hp, int64_t samples_per_epoch,
                                      int64_t num_workers) {
  ScheduleOptions o;
  o.type = hp.learning_rate_decay_type;
  o.learning_rate = hp.learning_rate;
  o.end_learning_rate = hp.end_learning_rate;
  o.decay_factor = hp.learning_rate_decay_factor;
  const int64_t global_batch = hp.images_per_step() * std::max<int64_t>(1, num_workers);
  if (hp.warmup_scheme == "t2t" || hp.warmup_scheme == "linear") {
    o.warmup = hp.warmup_scheme;
    o.warmup_steps = hp.warmup_epochs
                         ? epochs_to_steps(*hp.warmup_epochs, samples_per_epoch, global_batch)
                         : hp.warmup_steps;
  }
  o.total_steps = hp.stop_at_step;
  o.alpha = hp.min_lr_ratio;
  if (o.type == "cosine" && o.total_steps <= o.warmup_steps) {
    throw ConfigError(hp.where("learning_rate_decay_type") +
                      ": learning_rate_decay_type: 'cosine' needs a horizon (" +
                      std::to_string(o.total_steps) + " steps, from " +
                      (stop_from_num_epochs(hp) ? "num_epochs" : "stop_at_step") +
                      ") beyond the warmup (" + std::to_string(o.warmup_steps) + " steps)");
  }
  const int64_t s = hp.stop_at_step;
  if (hp.num_epochs_per_decay) {
    o.decay_start = 0;
    o.decay_steps = epochs_to_steps(*hp.num_epochs_per_decay, samples_per_epoch, global_batch);
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
