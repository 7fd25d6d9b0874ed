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
#include <utility>
#include <vector>

namespace fastnn::train {

/// Pooled statistics of W equal-count groups (seeds/004: weighted mean, and
/// variance = Σ m_j/M [s_j² + (x_j - x_c)²]), from the sums over groups of
/// the means and of (variance + mean²). Returns {mean, variance}.
std::pair<torch::Tensor, torch::Tensor> pooled_moments(const torch::Tensor& sum_means,
                                                       const torch::Tensor& sum_second,
                                                       int64_t groups);

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
  /// This worker's batch moments of the last forward, float64, on the
  /// layers' device: [means of every layer..., (biased variance + mean²) of
  /// every layer...]. A few operations over one flat buffer, whatever the
  /// number of layers; nothing is read on the host.
  torch::Tensor local_moments(int64_t batch_size);
  /// Gradient accumulation: after the forward of a micro-batch that is
  /// not its step's last, keeps its local_moments and snapshots, so the
  /// next micro-batch's moments are recovered from its own update.
  void keep_micro_batch(int64_t batch_size);
  /// The step's moments: the kept micro-batches' and the last forward's,
  /// one local_moments block each, in order (one block without
  /// accumulation).
  torch::Tensor step_moments(int64_t batch_size);
  /// Sets the moving statistics from the moments summed over `world`
  /// workers of `batch_size` images each (one block per micro-batch,
  /// applied in order from the step's starting point, as one worker with
  /// `world` × `batch_size` images per micro-batch would), then snapshots
  /// (on the device).
  void apply(const torch::Tensor& summed, int world, int64_t batch_size);

 private:
  struct Layer {
    torch::nn::Module* module = nullptr;
    torch::Tensor mean, variance;  // the module's buffers
    double momentum = 0;
    int64_t count = 0;
  };
  /// The layers' buffers in one flat tensor [means..., variances...].
  torch::Tensor gather() const;
  /// Per channel, float64, on the layers' device: the momentum m, 1 - m,
  /// and the unbiasing factors for `batch_size` (and `world`), made once
  /// per batch size.
  void prepare_factors(int64_t batch_size, int world);
  std::vector<Layer> layers_;
  std::vector<torch::Tensor> buffers_;  // means..., variances...
  std::vector<int64_t> sizes_;          // of buffers_
  torch::nn::Module& root_;
  int64_t channels_total_ = 0;
  /// float64 [means..., variances...] at the last snapshot.
  torch::Tensor prev_;
  /// Gradient accumulation: the step's starting point, and the moments of
  /// its micro-batches so far.
  torch::Tensor step_start_;
  std::vector<torch::Tensor> kept_;
  torch::Tensor momentum_, keep_;  // m and 1 - m per channel
  torch::Tensor to_biased_;        // (n - 1) / n per channel, n = count · batch
  torch::Tensor to_unbiased_;      // N / (N - 1) per channel, N = count · batch · world
  int64_t factors_batch_ = -1;
  int factors_world_ = -1;
};

}  // namespace fastnn::train
