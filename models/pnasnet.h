// PNASNet-5 as defined by TF-slim (research/slim/nets/nasnet/pnasnet.py with
// the cell machinery of nasnet_utils.py), after Liu et al., "Progressive
// Neural Architecture Search" (arXiv:1712.00559). Variants: pnasnet_large
// (331, 12 cells, 216 filters, stem x3, drop path keep 0.6) and
// pnasnet_mobile (224, 9 cells, 54 filters, stem x1, no drop path).
//
// Scope layout (no outer model scope, as in TF-slim's checkpoints):
//   conv0 (3x3/2 VALID), conv0_bn;
//   cell_stem_0, cell_stem_1 (stride 2), cell_0 .. cell_<n-1>, the cells at
//   n/3 and 2n/3 striding by 2 and doubling the filters. Each cell:
//     prev_1x1 + prev_bn, or path1_conv, path2_conv, final_path_bn (the
//       factorized reduction of the previous cell's output when its side
//       differs, in paths of int(F/2) and int(F/2) + F%2 channels), or
//       nothing in cell_stem_0: with no previous layer it takes its own
//       input as it is;
//     1x1, beginning_bn;
//     comb_iter_<0..4>/{left,right}/: separable_KxK_<1,2> (depthwise_weights,
//       pointwise_weights) with bn_sep_KxK_<1,2>, or 1x1 + bn_1 (a strided
//       "none" op, or a pool whose input width differs).
//   aux_<2n/3 - 1>/aux_logits/{proj, aux_bn0, Conv, aux_bn1, FC};
//   final_layer/FC.
//
// arg_scope (nasnet_{large,mobile}_arg_scope): conv2d and separable_conv2d
// without biases or activation, batch_norm decay 0.9997, eps 1e-3, with
// gamma; variance_scaling_initializer(mode=FAN_OUT) for conv, separable and
// fully-connected weights, all L2-regularized.
#pragma once

#include <torch/nn/modules/linear.h>

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// TF-slim's {large,mobile}_imagenet_config hyperparameters that shape the
/// network.
struct PnasnetConfig {
  double stem_multiplier = 3.0;
  int64_t num_cells = 12;
  int64_t num_conv_filters = 216;
  double drop_path_keep_prob = 0.6;
  /// Steps over which drop path ramps from off to drop_path_keep_prob.
  int64_t total_training_steps = 250000;
  int64_t default_image_size = 331;
};

/// pnasnet_large: 331, 12 cells, 216 filters.
PnasnetConfig pnasnet_large_config();
/// pnasnet_mobile: 224, 9 cells, 54 filters.
PnasnetConfig pnasnet_mobile_config();

/// slim.conv2d without bias or activation (the nasnet arg_scope).
class PnasConvImpl;
/// One PNASNet cell (the same cell serves as stem and as reduction cell).
class PnasCellImpl;

/// PNASNet with its auxiliary head. The aux head runs in training mode only
/// (TF-slim builds it only when is_training); its variables always exist.
/// REQUIRES: image side >= 67 (the aux pool needs a 5x5 map).
class PnasnetImpl : public ClassifierImpl {
 public:
  PnasnetImpl(const ModelOptions& options, const PnasnetConfig& config);
  ModelOutput forward(torch::Tensor images) override;

  /// Every conv, separable (depthwise and pointwise) and fc weight.
  std::vector<torch::Tensor> regularized_weights() override;

  /// The global step for drop path's schedule (TF-slim's v3): a cell's
  /// keep probability falls linearly from 1 at step 0 to its depth-scaled
  /// target at total_training_steps. Default 0 (drop path off).
  void set_global_step(int64_t step) override;

 private:
  std::vector<std::shared_ptr<PnasCellImpl>> cells_;  // Stem cells first.
  std::shared_ptr<torch::nn::Module> aux_;
  std::shared_ptr<PnasConvImpl> conv0_, aux_proj_, aux_conv_;
  TfBatchNorm conv0_bn_{nullptr}, aux_bn0_{nullptr}, aux_bn1_{nullptr};
  torch::nn::Linear aux_fc_{nullptr}, fc_{nullptr};
  size_t aux_tap_ = 0;  // Index into cells_ of the cell feeding aux_.
  double dropout_keep_prob_;
  int64_t total_training_steps_;
  double drop_path_progress_ = 0.0;  // min(1, step / total_training_steps)
  int64_t image_size_;
};

/// pnasnet_large / pnasnet_mobile for the model table.
std::shared_ptr<ClassifierImpl> make_pnasnet_large(const ModelOptions& o);
std::shared_ptr<ClassifierImpl> make_pnasnet_mobile(const ModelOptions& o);

}  // namespace fastnn::models
