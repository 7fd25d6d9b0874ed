// Averages gradients over the workers in fused buckets, DDP-style: each
// parameter's .grad is a view into its bucket (autograd accumulates there,
// nothing is copied), and each bucket's all-reduce starts from a hook on
// the gradient accumulators as soon as its last gradient is in, so
// communication overlaps the rest of backward.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "src/dist/collective.h"

namespace fastnn::dist {

class GradientReducer {
 public:
  /// `params` in registration order (every one requires grad). Buckets are
  /// filled from the last parameter backwards (backward produces those
  /// first), each at most `bucket_cap_bytes` unless one tensor alone is
  /// larger. `comm` must outlive the reducer.
  GradientReducer(Collective& comm, std::vector<torch::Tensor> params, int64_t bucket_cap_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Arms the hooks; call before backward. Each .grad may be none (the
  /// cheapest: backward's result is moved into the bucket in one pass),
  /// the bucket view from the last step (zeroed or not: backward adds to
  /// it), or a tensor put there since (backward adds to it; its values
  /// are moved into the bucket).
  void prepare();
  /// Launches what backward left (a parameter without a gradient counts as
  /// zero), waits for every bucket, and leaves grad = Σ grads / W on every
  /// parameter, as views of the buckets. The wait is the engine's: Gloo's
  /// blocks the host; NCCL's makes the current CUDA stream wait for each
  /// bucket's collective and returns at once. Throws DistributedError on a
  /// timeout or a lost peer.
  void finish();

  /// Parameter indices of each bucket, in launch order.
  std::vector<std::vector<size_t>> buckets() const;
  /// Buckets of the last step whose all-reduce started inside backward.
  int launched_during_backward() const { return launched_early_; }

 private:
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    torch::Tensor flat;
    size_t pending = 0;
    std::unique_ptr<PendingCollective> work;
  };
  void on_gradient(size_t index);
  void take_share(size_t k);
  void launch_ready_locked();

  Collective& comm_;
  std::vector<torch::Tensor> params_;
  /// 1 / W: each rank contributes g / W, so the sum is the average.
  const double inv_world_;
  std::vector<Bucket> buckets_;
  /// params_[i] -> (bucket, position in bucket)
  std::vector<std::pair<size_t, size_t>> where_;
  /// params_[i]'s slice of its bucket, with the parameter's sizes and
  /// strides.
  std::vector<torch::Tensor> views_;
  std::vector<bool> filled_;
  /// The gradient accumulators (kept alive, as DDP does) and hook keys.
  // grad_accumulator's pointer: a shared_ptr<Node> in LibTorch 1.13 to 2.11,
  // an intrusive_ptr<Node> in 2.15.
  using AccumulatorPtr =
      decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));
  std::vector<AccumulatorPtr> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  std::mutex mu_;
  bool armed_ = false;
  size_t next_launch_ = 0;
  int launched_early_ = 0;
};

}  // namespace fastnn::dist
