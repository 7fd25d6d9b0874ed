// Averages gradients over the workers in fused buckets, DDP-style: each
// bucket's all-reduce starts from an autograd hook as soon as its last
// gradient is ready, so communication overlaps the rest of backward.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "src/dist/communicator.h"

namespace fastnn::dist {

class GradientReducer {
 public:
  /// `params` in registration order (every one requires grad). Buckets are
  /// filled from the last parameter backwards (backward produces those
  /// first), each at most `bucket_cap_bytes` unless one tensor alone is
  /// larger. `comm` must outlive the reducer.
  GradientReducer(Communicator& comm, std::vector<torch::Tensor> params,
                  int64_t bucket_cap_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Arms the hooks; call before backward.
  void prepare();
  /// Launches what backward left (a parameter without a gradient counts as
  /// zero), waits for every bucket, and leaves grad = Σ grads / W on every
  /// parameter. Throws DistributedError on a timeout or a lost peer.
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
    c10::intrusive_ptr<c10d::Work> work;
  };
  void on_gradient(size_t index, const torch::Tensor& grad);
  void launch_ready_locked();

  Communicator& comm_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  /// params_[i] -> (bucket, position in bucket)
  std::vector<std::pair<size_t, size_t>> where_;
  std::vector<bool> filled_;
  std::vector<unsigned> hook_ids_;
  std::mutex mu_;
  bool armed_ = false;
  size_t next_launch_ = 0;
  int launched_early_ = 0;
};

}  // namespace fastnn::dist
