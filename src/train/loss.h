// The pieces of the training objective and gradient handling that follow
// TF-slim's definitions exactly.
#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

#include "src/optim/optimizers.h"

namespace fastnn::train {

/// Mean sparse softmax cross-entropy; with smoothing > 0 the targets are
/// TF's onehot * (1 - smoothing) + smoothing / num_classes.
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                  double smoothing);

/// TF-slim's L2 regularizer over `weights`, applied after backward: adds
/// its gradient decay * w to each weight's gradient (allocating the
/// gradient for a trainable weight that has none) and returns its value
/// decay * sum(w^2) / 2 for the logged total loss. Same result as adding
/// the term to the loss, without growing the autograd graph.
double apply_l2_regularization(const std::vector<torch::Tensor>& weights, double decay);

/// apply_l2_regularization without reading the device: adds the
/// gradients and returns each weight's sum(w^2), not yet read (on the
/// weights' device), for l2_regularization_value (on CUDA, one tensor of
/// them all, from fused per-weight norms).
std::vector<torch::Tensor> add_l2_regularization_gradients(
    const std::vector<torch::Tensor>& weights, double decay);
/// decay * sum(w^2) / 2 from the per-weight sums (added in order, in double).
double l2_regularization_value(const double* square_sums, size_t n, double decay);

/// sqrt of the sum of squares of every defined gradient (per-tensor norms
/// combined in double); Inf/NaN when a gradient holds one.
double gradient_global_norm(const std::vector<optim::Variable>& vars);
/// The same as a float64 scalar on the gradients' device, not yet read
/// (0 when no gradient is defined).
torch::Tensor gradient_global_norm_tensor(const std::vector<optim::Variable>& vars);

/// Reads tensors of one device to the host in one copy (one host
/// synchronisation on a GPU), as doubles, every element in order; integers
/// up to 2^53 and every float come back exactly. Every read of a training
/// step goes through here (host_reads counts them).
std::vector<double> read_scalars(const std::vector<torch::Tensor>& values);

/// Calls of read_scalars in this process so far: the counting seam that
/// holds the documented number of host reads per step.
int64_t host_reads();

/// Multiplies every defined gradient by `factor` (unscaling, clipping).
void scale_gradients(const std::vector<optim::Variable>& vars, double factor);

/// The scaling half of clip_by_global_norm, with the norm already known.
void clip_to_global_norm(const std::vector<optim::Variable>& vars, double norm, double clip);
/// The same with the norm still on the device (a 0-d tensor), without
/// reading it: every gradient times clip / max(norm, clip), the factor
/// being exactly 1 when the norm is within the bound.
void clip_to_global_norm(const std::vector<optim::Variable>& vars, const torch::Tensor& norm,
                         double clip);

/// TF's clip_by_global_norm over the variables' gradients: each scaled by
/// clip / max(global_norm, clip). Returns the norm before clipping.
double clip_by_global_norm(const std::vector<optim::Variable>& vars, double clip);

/// TF's ExponentialMovingAverage decay with num_updates:
/// min(decay, (1 + n) / (10 + n)).
double moving_average_decay_at(double decay, int64_t num_updates);

/// True when `name` starts with one of the comma-separated scopes, or the
/// list is empty (TF-slim's trainable_scopes).
bool in_scopes(const std::string& name, const std::string& scopes);

}  // namespace fastnn::train
