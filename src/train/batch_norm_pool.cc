#include "src/train/batch_norm_pool.h"

#include <cmath>

#include "models/layers.h"
#include "src/compat/torch_compat.h"
#include "src/dist/process_group.h"
#include "src/train/rng_state.h"

namespace fastnn::train {
namespace {

// Restores the moving statistics, the training flags and the default RNGs
// (the CPU's, and the GPU's where the model is on one: measure_counts draws
// its probe image there) when a measurement ends, whatever happens in
// between.
class ProbeGuard {
 public:
  ProbeGuard(torch::nn::Module& root, std::vector<torch::Tensor> buffers)
      : root_(root),
        training_(root.is_training()),
        buffers_(std::move(buffers)),
        rng_(buffers_.empty() ? torch::Device(torch::kCPU) : buffers_.front().device()) {
    for (const auto& b : buffers_) saved_.push_back(b.clone());
  }
  ~ProbeGuard() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(saved_[i]);
    root_.train(training_);
  }

 private:
  torch::nn::Module& root_;
  bool training_;
  std::vector<torch::Tensor> buffers_, saved_;
  RngGuard rng_;
};

}  // namespace

BatchNormPool::BatchNormPool(torch::nn::Module& root) : root_(root) {
  std::vector<torch::Tensor> buffers;
  // include_self would need `root` held by a shared_ptr; a BatchNorm is
  // never the root of a model anyway.
  for (const auto& child : root.modules(/*include_self=*/false)) {
    if (!child->as<models::TfBatchNormImpl>()) continue;
    auto named = child->named_buffers(/*recurse=*/false);
    Layer layer;
    layer.module = child.get();
    layer.mean = named["moving_mean"];
    layer.variance = named["moving_variance"];
    buffers.push_back(layer.mean);
    buffers.push_back(layer.variance);
    channels_total_ += layer.mean.numel();
    layers_.push_back(std::move(layer));
  }
  for (const auto& layer : layers_) buffers_.push_back(layer.mean);
  for (const auto& layer : layers_) buffers_.push_back(layer.variance);
  for (const auto& buffer : buffers_) sizes_.push_back(buffer.numel());
  if (layers_.empty()) return;
  ProbeGuard guard(root, buffers);
  torch::NoGradGuard no_grad;
  for (auto& layer : layers_) {
    // Rows 2 and 0: batch mean 1, so the moving mean becomes m exactly.
    auto probe = torch::zeros({2, layer.mean.numel()}, layer.mean.options());
    probe[0].fill_(2);
    layer.mean.zero_();
    layer.module->train(true);
    layer.module->as<models::TfBatchNormImpl>()->forward(probe);
    layer.momentum = layer.mean[0].item<double>();
  }
}

std::vector<int64_t> BatchNormPool::counts() const {
  std::vector<int64_t> out;
  for (const auto& l : layers_) out.push_back(l.count);
  return out;
}

std::vector<double> BatchNormPool::momenta() const {
  std::vector<double> out;
  for (const auto& l : layers_) out.push_back(l.momentum);
  return out;
}

void BatchNormPool::measure_counts(const std::function<void(const torch::Tensor&)>& forward,
                                   std::vector<int64_t> image_chw) {
  if (layers_.empty()) return;
  std::vector<torch::Tensor> buffers;
  for (const auto& layer : layers_) {
    buffers.push_back(layer.mean);
    buffers.push_back(layer.variance);
  }
  ProbeGuard guard(root_, buffers);
  torch::NoGradGuard no_grad;
  image_chw.insert(image_chw.begin(), 1);
  const auto image = torch::randn(image_chw, layers_.front().mean.options());
  // Dropout (and anything else random) off; BatchNorm in training mode.
  root_.eval();
  for (auto& layer : layers_) layer.module->train(true);
  // Identical images give every layer the same per-image statistics, so
  // the moving variances of batch 2 and batch 4 differ only by the
  // unbiased factor n/(n-1), n = batch·H·W.
  auto variances_for = [&](int64_t copies) {
    for (auto& layer : layers_) layer.variance.zero_();
    forward(image.repeat({copies, 1, 1, 1}));
    std::vector<double> sums;
    for (auto& layer : layers_)
      sums.push_back(layer.variance.to(torch::kFloat64).sum().item<double>());
    return sums;
  };
  const auto two = variances_for(2);
  const auto four = variances_for(4);
  for (size_t i = 0; i < layers_.size(); ++i) {
    // ratio r = v2/v4 = (4h-1) / (2(2h-1))  =>  positions h = (2r-1) / (4(r-1)).
    // No variance at all between identical images: one value per image
    // and channel (an NC input, or 1x1 spatial).
    if (two[i] == 0 && four[i] == 0) {
      layers_[i].count = 1;
      continue;
    }
    const double ratio = two[i] / four[i];
    const double positions = (2 * ratio - 1) / (4 * (ratio - 1));
    layers_[i].count = std::isfinite(positions) && positions >= 0.5 ? std::llround(positions) : 0;
  }
}

torch::Tensor BatchNormPool::gather() const { return torch::cat(buffers_).to(torch::kFloat64); }

void BatchNormPool::prepare_factors(int64_t batch_size, int world) {
  if (batch_size == factors_batch_ && world == factors_world_) return;
  std::vector<double> m, keep, biased, unbiased;
  for (const auto& l : layers_) {
    const int64_t c = l.mean.numel();
    const int64_t n = l.count * batch_size;
    const int64_t total = n * world;
    m.insert(m.end(), c, l.momentum);
    keep.insert(keep.end(), c, 1 - l.momentum);
    biased.insert(biased.end(), c,
                  n > 1 ? static_cast<double>(n - 1) / static_cast<double>(n) : 1.0);
    unbiased.insert(unbiased.end(), c,
                    total > 1 ? static_cast<double>(total) / static_cast<double>(total - 1) : 1.0);
  }
  const auto device = layers_.front().mean.device();
  auto to_device = [&](const std::vector<double>& v) {
    return torch::tensor(v, torch::kFloat64).to(device);
  };
  momentum_ = to_device(m);
  keep_ = to_device(keep);
  to_biased_ = to_device(biased);
  to_unbiased_ = to_device(unbiased);
  factors_batch_ = batch_size;
  factors_world_ = world;
}

void BatchNormPool::snapshot() {
  if (layers_.empty()) return;
  prev_ = gather();
}

torch::Tensor BatchNormPool::local_moments(int64_t batch_size) {
  if (layers_.empty()) return torch::zeros({0}, torch::kFloat64);
  prepare_factors(batch_size, factors_world_ < 0 ? 1 : factors_world_);
  const int64_t c = channels_total_;
  const auto current = gather();
  // moving = (1-m)·prev + m·batch  =>  batch = (moving - (1-m)·prev) / m.
  const auto mean = (current.narrow(0, 0, c) - keep_ * prev_.narrow(0, 0, c)) / momentum_;
  const auto var =
      (current.narrow(0, c, c) - keep_ * prev_.narrow(0, c, c)) / momentum_ * to_biased_;
  return torch::cat({mean, var + mean * mean});
}

void BatchNormPool::keep_micro_batch(int64_t batch_size) {
  torch::NoGradGuard no_grad;
  if (layers_.empty()) return;
  if (kept_.empty()) step_start_ = prev_;
  kept_.push_back(local_moments(batch_size));
  snapshot();
}

torch::Tensor BatchNormPool::step_moments(int64_t batch_size) {
  torch::NoGradGuard no_grad;
  if (kept_.empty()) return local_moments(batch_size);
  kept_.push_back(local_moments(batch_size));
  auto all = torch::cat(kept_);
  kept_.clear();
  return all;
}

void BatchNormPool::apply(const torch::Tensor& summed_anywhere, int world, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  if (layers_.empty()) return;
  prepare_factors(batch_size, world);
  const int64_t c = channels_total_;
  const auto summed = summed_anywhere.to(layers_.front().mean.device());
  const int64_t blocks = summed.numel() / (2 * c);
  if (blocks > 1) prev_ = step_start_;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = summed.narrow(0, b * 2 * c, 2 * c);
    auto [mean, var] = pooled_moments(block.narrow(0, 0, c), block.narrow(0, c, c), world);
    var = var * to_unbiased_;
    const auto updated = torch::cat({keep_ * prev_.narrow(0, 0, c) + momentum_ * mean,
                                     keep_ * prev_.narrow(0, c, c) + momentum_ * var})
                             .to(buffers_.front().scalar_type());
    const auto parts = updated.split_with_sizes(sizes_);
    if (compat::use_foreach(updated.device())) {
      compat::foreach_copy(buffers_, parts);
    } else {
      for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(parts[i]);
    }
    snapshot();
  }
}

std::pair<torch::Tensor, torch::Tensor> pooled_moments(const torch::Tensor& sum_means,
                                                       const torch::Tensor& sum_second,
                                                       int64_t groups) {
  const auto mean = sum_means / static_cast<double>(groups);
  // Σ m_j/M [s_j² + (x_j - x_c)²] = mean of (s_j² + x_j²) - x_c² when the
  // counts are equal; callers pass float64 sums, so nothing cancels badly.
  const auto variance = (sum_second / static_cast<double>(groups) - mean * mean).clamp_min(0);
  return {mean, variance};
}

}  // namespace fastnn::train
