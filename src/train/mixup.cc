#include "src/train/mixup.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "src/train/loss.h"

namespace fastnn::train {
namespace {

// numpy's beta(a, a) as X / (X + Y) of two Gamma(a, 1) draws.
double beta(std::mt19937_64& rng, double alpha) {
  std::gamma_distribution<double> gamma(alpha, 1.0);
  const double x = gamma(rng), y = gamma(rng);
  return x + y > 0 ? x / (x + y) : 0.5;
}

}  // namespace

MixParams draw_mix(const MixupOptions& o, int64_t batch, int64_t height, int64_t width) {
  MixParams p;
  if (!o.enabled()) return p;
  std::seed_seq seq{static_cast<uint32_t>(o.seed), static_cast<uint32_t>(o.seed >> 32),
                    static_cast<uint32_t>(o.rank), static_cast<uint32_t>(batch),
                    static_cast<uint32_t>(static_cast<uint64_t>(batch) >> 32)};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (!(unit(rng) < o.prob)) return p;
  if (o.mixup_alpha > 0 && o.cutmix_alpha > 0) {
    p.cutmix = unit(rng) < o.switch_prob;
    p.lambda = beta(rng, p.cutmix ? o.cutmix_alpha : o.mixup_alpha);
  } else if (o.mixup_alpha > 0) {
    p.lambda = beta(rng, o.mixup_alpha);
  } else {
    p.cutmix = true;
    p.lambda = beta(rng, o.cutmix_alpha);
  }
  if (!p.mixes() || !p.cutmix) return p;
  // rand_bbox: a box of sides int(side * sqrt(1 - lambda)) centred on a
  // uniform pixel, clipped to the image; lambda becomes 1 - its share.
  const double ratio = std::sqrt(1.0 - p.lambda);
  const auto cut_h = static_cast<int64_t>(height * ratio);
  const auto cut_w = static_cast<int64_t>(width * ratio);
  const int64_t cy = std::uniform_int_distribution<int64_t>(0, height - 1)(rng);
  const int64_t cx = std::uniform_int_distribution<int64_t>(0, width - 1)(rng);
  p.y0 = std::clamp<int64_t>(cy - cut_h / 2, 0, height);
  p.y1 = std::clamp<int64_t>(cy + cut_h / 2, 0, height);
  p.x0 = std::clamp<int64_t>(cx - cut_w / 2, 0, width);
  p.x1 = std::clamp<int64_t>(cx + cut_w / 2, 0, width);
  p.lambda = 1.0 - static_cast<double>((p.y1 - p.y0) * (p.x1 - p.x0)) /
                       static_cast<double>(height * width);
  return p;
}

torch::Tensor mix_images(const torch::Tensor& images, const MixParams& p) {
  torch::NoGradGuard no_grad;
  const auto flipped = images.flip(0);
  if (!p.cutmix) return images * p.lambda + flipped * (1.0 - p.lambda);
  auto out = images.clone();
  using torch::indexing::Slice;
  const std::vector<torch::indexing::TensorIndex> box = {Slice(), Slice(), Slice(p.y0, p.y1),
                                                         Slice(p.x0, p.x1)};
  out.index_put_(box, flipped.index(box));
  return out;
}

torch::Tensor mixed_classification_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                        const MixParams& p, double smoothing) {
  const auto own = classification_loss(logits, labels, smoothing);
  if (!p.mixes()) return own;
  return own * p.lambda + classification_loss(logits, labels.flip(0), smoothing) * (1.0 - p.lambda);
}

torch::Tensor dominant_labels(const torch::Tensor& labels, const MixParams& p) {
  return p.lambda >= 0.5 ? labels : labels.flip(0);
}

}  // namespace fastnn::train
