// The collectives replicated-variables training needs, independent of the
// engine that carries them: c10d's Gloo group for CPU tensors, its NCCL
// group for CUDA tensors (ProcessGroupCollective, process_group.h). Collectives must be called in
// the same order on every rank. Every call is bounded by the engine's timeout; a timeout or a lost
// peer throws DistributedError (exit 5) naming the operation and the global step.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fastnn::dist {

/// A collective in flight.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  /// Waits for completion, bounded; DistributedError naming `what`.
  virtual void wait(const std::string& what) = 0;
};

class Collective {
 public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// The engine's name for messages ("Gloo", "NCCL").
  virtual std::string backend() const = 0;
  /// The global step named in error messages.
  virtual void set_step(int64_t step) = 0;

  /// Overwrites `tensors` on every rank with rank 0's values. `what` names
  /// the payload in errors.
  virtual void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) = 0;
  /// In-place sum over ranks of each tensor.
  virtual void all_reduce_sum(const std::vector<torch::Tensor>& tensors,
                              const std::string& what) = 0;
  /// Starts an in-place sum of one contiguous tensor (a gradient bucket);
  /// the tensor must not be touched until the result's wait() returns.
  virtual std::unique_ptr<PendingCollective> all_reduce_async(torch::Tensor flat) = 0;
  /// Every rank reached this point (bounded).
  virtual void barrier(const std::string& what) = 0;
};

}  // namespace fastnn::dist
