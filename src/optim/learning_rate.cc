#include "src/optim/learning_rate.h"

#include <algorithm>
#include <cmath>

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

}  // namespace fastnn::optim
