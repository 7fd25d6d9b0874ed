// The step size for the zoo's one-training-step tests: the SGD rate that
// lowers the loss by `fraction` to first order (lr * |g|^2 = fraction *
// loss). A fixed rate suits no BatchNorm network at initialization (its
// gradients are huge), and float noise hides very small steps.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "src/optim/optimizers.h"

namespace fastnn::testing {

inline double first_order_rate(const std::vector<optim::Variable>& vars, double loss,
                               double fraction = 0.01) {
  double g2 = 0;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) g2 += v.var.grad().pow(2).sum().item<double>();
  }
  return fraction * loss / g2;
}

}  // namespace fastnn::testing
