#include "src/train/mixup.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "src/train/loss.h"

namespace fastnn::train {
namespace {

// The log of a Gamma(a, 1) draw, for an `a` so small that the draw itself
// underflows to 0: Gamma(a) = Gamma(a + 1) * U^(1/a) (Marsaglia and Tsang).
double log_gamma_draw(std::mt19937_64& rng, double a) {
  std::gamma_distribution<double> gamma(a + 1, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double g = gamma(rng);
  return std::log(g) + std::log1p(-uniform(rng)) / a;
}

// numpy's beta(a, a) as X / (X + Y) of two Gamma(a, 1) draws. Where both
// underflow (a tiny alpha), the draws are made again in log space: Beta(e,
// e) puts lambda next to 0 or 1, never at one half.
double beta(std::mt19937_64& rng, double alpha) {
  std::gamma_distribution<double> gamma(alpha, 1.0);
  const double x = gamma(rng), y = gamma(rng);
  if (x + y > 0) return x / (x + y);
  const double log_x = log_gamma_draw(rng, alpha), log_y = log_gamma_draw(rng, alpha);
  return 1.0 / (1.0 + std::exp(log_y - log_x));
}

}  // namespace

MixParams draw_mix(const MixupOptions& options, int64_t batch, int64_t height, int64_t width) {
  MixParams mix;
  if (!options.enabled()) return mix;
  std::seed_seq seq{static_cast<uint32_t>(options.seed), static_cast<uint32_t>(options.seed >> 32),
                    static_cast<uint32_t>(options.rank), static_cast<uint32_t>(batch),
                    static_cast<uint32_t>(static_cast<uint64_t>(batch) >> 32)};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (!(unit(rng) < options.prob)) return mix;
  if (options.mixup_alpha > 0 && options.cutmix_alpha > 0) {
    mix.cutmix = unit(rng) < options.switch_prob;
    mix.lambda = beta(rng, mix.cutmix ? options.cutmix_alpha : options.mixup_alpha);
  } else if (options.mixup_alpha > 0) {
    mix.lambda = beta(rng, options.mixup_alpha);
  } else {
    mix.cutmix = true;
    mix.lambda = beta(rng, options.cutmix_alpha);
  }
  if (!mix.mixes() || !mix.cutmix) return mix;
  // rand_bbox: a box of sides int(side * sqrt(1 - lambda)) centred on a
  // uniform pixel, clipped to the image; lambda becomes 1 - its share.
  const double ratio = std::sqrt(1.0 - mix.lambda);
  const auto cut_h = static_cast<int64_t>(height * ratio);
  const auto cut_w = static_cast<int64_t>(width * ratio);
  const int64_t cy = std::uniform_int_distribution<int64_t>(0, height - 1)(rng);
  const int64_t cx = std::uniform_int_distribution<int64_t>(0, width - 1)(rng);
  mix.y0 = std::clamp<int64_t>(cy - cut_h / 2, 0, height);
  mix.y1 = std::clamp<int64_t>(cy + cut_h / 2, 0, height);
  mix.x0 = std::clamp<int64_t>(cx - cut_w / 2, 0, width);
  mix.x1 = std::clamp<int64_t>(cx + cut_w / 2, 0, width);
  mix.lambda = 1.0 - static_cast<double>((mix.y1 - mix.y0) * (mix.x1 - mix.x0)) /
                         static_cast<double>(height * width);
  return mix;
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
