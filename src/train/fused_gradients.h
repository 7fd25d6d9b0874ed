// The step's gradient bookkeeping in one pass on the CPU.
//
// After backward, a step with weight decay adds TF-slim's L2 gradient
// decay * w to each regularized weight's gradient, sums each such weight's
// squares (the logged total loss) and takes the global norm of every
// gradient (the divergence check, clipping). Done with LibTorch's
// operators that is four to five passes over the largest tensors (w^2 made
// and summed, the addition, the norm); here it is one read of each weight
// and gradient and one write of the gradient.
#pragma once

#include <torch/types.h>

#include <optional>
#include <vector>

#include "src/optim/optimizers.h"

namespace fastnn::train {

struct GradientPass {
  /// Each regularized weight's sum(w^2), in order, float64 scalars.
  std::vector<torch::Tensor> l2_sums;
  /// sqrt of the sum of squares of every defined gradient (after the L2
  /// gradients went in), a float64 scalar; Inf/NaN when one holds such.
  torch::Tensor norm;
};

/// The fused pass, where it serves: every defined gradient and every
/// regularized weight a contiguous float32 CPU tensor, every regularized
/// weight among `vars` with a gradient. Elsewhere nullopt, having touched nothing: the caller runs
/// add_l2_regularization_gradients and gradient_global_norm_tensor.
/// The addition rounds as LibTorch's add_(w, decay) on an AVX2 CPU (one
/// fused multiply-add); the sums run in float per 8 lanes over fixed
/// blocks, the blocks added in float64 in order: the same result at any
/// thread count, and within float rounding of the operators' sums.
std::optional<GradientPass> fused_l2_and_norm(const std::vector<torch::Tensor>& regularized,
                                              const std::vector<optim::Variable>& vars,
                                              double decay);

}  // namespace fastnn::train
