// ProcessGroupCollective: the one implementation of dist::Collective, over
// a c10d process group of either engine (process_group.h makes them). Not
// for general use: included by process_group.cc and nccl_group.cc only.
#pragma once

#include <torch/types.h>

#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "src/compat/c10d_compat.h"
#include "src/dist/collective.h"
#include "src/dist/process_group.h"

namespace fastnn::dist {

class ProcessGroupCollective : public Collective {
 public:
  /// `device`: where the engine's tensors live (CPU for Gloo, the CUDA
  /// device for NCCL); tensors elsewhere are staged through it. `teardown`
  /// runs in the destructor (NCCL: a bounded abort).
  ProcessGroupCollective(std::string backend, c10::intrusive_ptr<c10d::Store> store,
                         c10::intrusive_ptr<compat::ProcessGroupBackend> group,
                         CommunicatorOptions options, torch::Device device,
                         std::function<void()> teardown = {});
  ~ProcessGroupCollective() override;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  std::string backend() const override { return backend_; }
  void set_step(int64_t step) override { step_ = step; }

  /// One fused message per dtype, after checking that every rank passes the
  /// same count, dtypes and shapes (DistributedError on every rank if not).
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) override;
  /// Fused per dtype; the result is waited for (on the host for Gloo, on
  /// the current stream for NCCL).
  void all_reduce_sum(const std::vector<torch::Tensor>& tensors, const std::string& what) override;
  std::unique_ptr<PendingCollective> all_reduce_async(torch::Tensor flat) override;
  void barrier(const std::string& what) override;

  /// "<what> failed at global step N: <cause>" as a DistributedError.
  [[noreturn]] void fail(const std::string& what, const std::string& cause) const;

 private:
  class Pending;
  void check_same_layout(const std::vector<torch::Tensor>& tensors, const std::string& what);
  std::string backend_;
  CommunicatorOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::ProcessGroupBackend> group_;
  torch::Device device_;
  std::function<void()> teardown_;
  int64_t step_ = 0;
};

}  // namespace fastnn::dist
