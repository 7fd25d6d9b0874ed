// BatchNorm moving statistics combined across workers so that W workers
// with batch b end a step with the statistics one worker with batch W·b
// would have. Forward still normalizes each worker's batch by its own
// statistics (DDP without SyncBN); only the moving statistics are pooled.
//
// How: each layer's update is moving = (1-m)·moving + m·batch_stat. With
// the moving statistics of the previous step (equal on every worker) and
// the layer's momentum m, each worker recovers its batch mean and variance,
// the workers pool them (seeds/004: weighted mean, variance =
// Σ m_j/M [s_j² + (x_j - x_c)²]) and every worker applies the update with
// the pooled moments.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace fastnn::train {

class BatchNormPool {
 public:
  /// Every TfBatchNorm under `root`, each with its momentum (measured once
  /// by a forward of a known two-row input; the moving statistics are
  /// restored afterwards).
  explicit BatchNormPool(torch::nn::Module& root);

  /// Measures each layer's values per channel per image (H·W of its input),
  /// needed to turn the unbiased batch variances into the pooled unbiased
  /// one exactly: two forwards of identical images (batch 2 and 4) with
  /// dropout off. Everything the forwards change is restored. Without it,
  /// pooling treats the counts as large (error ≤ m/(2·b·H·W) relative).
  void measure_counts(const std::function<void(const torch::Tensor&)>& forward,
                      std::vector<int64_t> image_chw);

  size_t size() const { return layers_.size(); }
  /// Values per image per channel of each layer (0 = not measured).
  std::vector<int64_t> counts() const;
  std::vector<double> momenta() const;

  /// The current moving statistics become the common starting point (call
  /// after they are made equal on every worker, and after each apply).
  void snapshot();
  /// This worker's batch moments of the last forward, float64:
  /// [means of every layer..., (biased variance + mean²) of every layer...].
  torch::Tensor local_moments(int64_t batch_size) const;
  /// Sets the moving statistics from the moments summed over `world`
  /// workers of `batch_size` images each, then snapshots.
  void apply(const torch::Tensor& summed, int world, int64_t batch_size);

 private:
  struct Layer {
    torch::nn::Module* module = nullptr;
    torch::Tensor mean, variance;            // the module's buffers
    torch::Tensor prev_mean, prev_variance;  // float64 snapshot
    double momentum = 0;
    int64_t count = 0;
  };
  std::vector<Layer> layers_;
  torch::nn::Module& root_;
  int64_t channels_total_ = 0;
};

}  // namespace fastnn::train
