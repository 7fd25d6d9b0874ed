// Mixup and cutmix at batch level, with timm's Mixup semantics in batch
// mode (timm/data/mixup.py): one lambda per batch, drawn on the host; the
// batch is mixed with itself flipped along the batch dimension, and the
// targets become lambda * y + (1 - lambda) * y.flip(0), each y label
// smoothed as label_smoothing says. The mixing is device tensor arithmetic
// with host numbers: no read of the device.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace fastnn::train {

/// hparams mixup_alpha, cutmix_alpha, mixup_prob, mixup_switch_prob.
struct MixupOptions {
  /// Beta(alpha, alpha) of mixup's lambda; 0: no mixup. REQUIRES: >= 0.
  double mixup_alpha = 0;
  /// Beta(alpha, alpha) of cutmix's lambda; 0: no cutmix. REQUIRES: >= 0.
  double cutmix_alpha = 0;
  /// Probability that a batch is mixed at all. Default: 1.
  double prob = 1.0;
  /// With both alphas > 0: probability of cutmix rather than mixup.
  double switch_prob = 0.5;
  /// Seeds the draws with the rank and the batch number, so that a resumed
  /// run draws the same (hparams seed).
  uint64_t seed = 0;
  int rank = 0;

  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
};

/// One batch's draw: lambda, and for cutmix the box [y0, y1) x [x0, x1)
/// that takes the flipped batch's pixels (lambda then corrected to the
/// box's area, timm's correct_lam).
struct MixParams {
  double lambda = 1.0;
  bool cutmix = false;
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;

  /// lambda == 1: the batch and its targets stay as they are.
  bool mixes() const { return lambda != 1.0; }
};

/// timm's Mixup._params_per_batch and cutmix_bbox_and_lam for batch
/// number `batch` of images height x width.
MixParams draw_mix(const MixupOptions& options, int64_t batch, int64_t height, int64_t width);

/// The batch (N, C, H, W) mixed with its flip: mixup
/// lambda * x + (1 - lambda) * x.flip(0); cutmix: the box copied from the
/// flip. A new tensor; `images` is left alone.
torch::Tensor mix_images(const torch::Tensor& images, const MixParams& p);

/// Soft-target cross-entropy of the mixed targets,
/// lambda * CE(smoothed y) + (1 - lambda) * CE(smoothed y.flip(0)),
/// which equals -sum(target * log_softmax) averaged over the batch, since
/// the loss is linear in the target (classification_loss for each).
torch::Tensor mixed_classification_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                        const MixParams& p, double smoothing);

/// The dominant label of each mixed example: its own for lambda >= 0.5,
/// else the flipped batch's (training accuracy is counted against it).
torch::Tensor dominant_labels(const torch::Tensor& labels, const MixParams& p);

}  // namespace fastnn::train
