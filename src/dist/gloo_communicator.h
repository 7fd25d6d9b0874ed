// The Collective over Gloo (through LibTorch's c10d), for CPU tensors.
// Every call is bounded by the communicator's timeout; a timeout or a lost
// peer throws DistributedError (exit 5) naming the operation and the global
// step.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/dist/collective.h"

namespace c10d {
class ProcessGroupGloo;
}  // namespace c10d

namespace fastnn::dist {

struct CommunicatorOptions {
  int rank = 0;
  int world_size = 1;
  /// Bound of rendezvous and of every collective. Default: 60 s.
  std::chrono::milliseconds timeout{60000};
  /// The coordinator's host: Gloo listens on the local address that routes
  /// to it (GLOO_SOCKET_IFNAME, when set, wins). Empty: loopback.
  std::string coordinator_host;
};

/// One Gloo process group.
class GlooCommunicator : public Collective {
 public:
  /// Rendezvous through `store`; returns when all ranks connected.
  GlooCommunicator(c10::intrusive_ptr<c10d::Store> store,
                   const CommunicatorOptions& options);
  ~GlooCommunicator() override;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  std::string backend() const override { return "Gloo"; }
  void set_step(int64_t step) override { step_ = step; }

  /// One fused message per dtype, after checking that every rank passes the
  /// same count, dtypes and shapes (DistributedError on every rank if not).
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) override;
  /// Fused per dtype.
  void all_reduce_sum(const std::vector<torch::Tensor>& tensors,
                      const std::string& what) override;
  /// `flat`: a contiguous CPU tensor.
  std::unique_ptr<PendingCollective> all_reduce_async(torch::Tensor flat) override;
  void barrier(const std::string& what) override;

  /// "<what> failed at global step N: <cause>" as a DistributedError.
  [[noreturn]] void fail(const std::string& what, const std::string& cause) const;

 private:
  class Pending;
  /// DistributedError on every rank unless all pass tensors of the same
  /// dtypes and shapes; one small all-reduce.
  void check_same_layout(const std::vector<torch::Tensor>& tensors, const std::string& what);
  CommunicatorOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  // The concrete type: a ProcessGroup in LibTorch 1.x, a Backend in 2.x.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  int64_t step_ = 0;
};

/// Pooled statistics of W equal-count groups (seeds/004: weighted mean, and
/// variance = Σ m_j/M [s_j² + (x_j - x_c)²]), from the sums over groups of
/// the means and of (variance + mean²). Returns {mean, variance}.
std::pair<torch::Tensor, torch::Tensor> pooled_moments(const torch::Tensor& sum_means,
                                                        const torch::Tensor& sum_second,
                                                        int64_t groups);

/// The local address (numeric) a socket toward `host` leaves from; "" when
/// `host` does not resolve.
std::string local_address_toward(const std::string& host);

}  // namespace fastnn::dist
