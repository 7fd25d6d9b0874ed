#include "src/dist/process_group.h"

#include <map>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "fastnn/errors.h"
#include "src/dist/process_group_collective.h"

namespace fastnn::dist {
namespace {

// Groups tensors by dtype so one message carries each group.
std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype(
    const std::vector<torch::Tensor>& tensors) {
  std::map<c10::ScalarType, std::vector<torch::Tensor>> groups;
  for (const auto& t : tensors) groups[t.scalar_type()].push_back(t);
  return groups;
}

// One contiguous tensor on the engine's device (CPU tensors given to NCCL,
// such as counters, are staged through the GPU).
torch::Tensor flatten(const std::vector<torch::Tensor>& tensors, const torch::Device& device) {
  std::vector<torch::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}).to(device));
  return flat.size() == 1 ? flat.front().clone() : torch::cat(flat);
}

// The layout of a list of tensors, for comparing across ranks: count,
// elements, and a 62-bit hash (FNV-1a) of every dtype and shape in order.
std::vector<int64_t> layout_of(const std::vector<torch::Tensor>& tensors) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](int64_t v) {
    for (int i = 0; i < 8; ++i)
      h = (h ^ ((static_cast<uint64_t>(v) >> (8 * i)) & 255)) * 1099511628211ull;
  };
  int64_t elements = 0;
  for (const auto& t : tensors) {
    mix(static_cast<int64_t>(t.scalar_type()));
    mix(t.dim());
    for (int64_t d : t.sizes()) mix(d);
    elements += t.numel();
  }
  return {static_cast<int64_t>(tensors.size()), elements, static_cast<int64_t>(h >> 2)};
}

void unflatten_into(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

}  // namespace

ProcessGroupCollective::ProcessGroupCollective(
    std::string backend, c10::intrusive_ptr<c10d::Store> store,
    c10::intrusive_ptr<compat::ProcessGroupBackend> group, CommunicatorOptions options,
    torch::Device device, std::function<void()> teardown)
    : backend_(std::move(backend)),
      options_(std::move(options)),
      store_(std::move(store)),
      group_(std::move(group)),
      device_(device),
      teardown_(std::move(teardown)) {}

ProcessGroupCollective::~ProcessGroupCollective() {
  if (teardown_) teardown_();
}

void ProcessGroupCollective::fail(const std::string& what, const std::string& cause) const {
  throw DistributedError(
      what + " failed at global step " + std::to_string(step_) + " (rank " +
      std::to_string(options_.rank) + " of " + std::to_string(options_.world_size) + ", timeout " +
      std::to_string(options_.timeout.count() / 1000) + " s): " + cause.substr(0, 400));
}

// c10d's Work, waited for within the communicator's timeout: on the host
// for Gloo; for NCCL, wait() only makes the current stream wait (the
// watchdog bounds the collective itself), and an error it already saw is
// rethrown here.
class ProcessGroupCollective::Pending : public PendingCollective {
 public:
  Pending(const ProcessGroupCollective& comm, c10::intrusive_ptr<c10d::Work> work)
      : comm_(comm), work_(std::move(work)) {}
  void wait(const std::string& what) override {
    try {
      if (!work_->wait(comm_.options_.timeout)) comm_.fail(what, "timed out");
    } catch (const DistributedError&) {
      throw;
    } catch (const std::exception& e) {
      comm_.fail(what, e.what());
    }
  }

 private:
  const ProcessGroupCollective& comm_;
  c10::intrusive_ptr<c10d::Work> work_;
};

std::unique_ptr<PendingCollective> ProcessGroupCollective::all_reduce_async(torch::Tensor flat) {
  std::vector<torch::Tensor> one{std::move(flat)};
  try {
    return std::make_unique<Pending>(*this, group_->allreduce(one));
  } catch (const std::exception& e) {
    fail("all-reduce", e.what());
  }
}

void ProcessGroupCollective::check_same_layout(const std::vector<torch::Tensor>& tensors,
                                               const std::string& what) {
  const std::vector<int64_t> mine = layout_of(tensors);
  // One all-reduce of {layout, -layout} under MAX gives every rank both the
  // largest and the smallest value of each field.
  auto host = torch::empty({6}, torch::kInt64);
  for (int i = 0; i < 3; ++i) {
    host[i] = mine[i];
    host[i + 3] = -mine[i];
  }
  std::vector<torch::Tensor> one{host.to(device_)};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  std::unique_ptr<PendingCollective> pending;
  try {
    pending = std::make_unique<Pending>(*this, group_->allreduce(one, max));
  } catch (const std::exception& e) {
    fail(what, e.what());
  }
  pending->wait(what);
  const auto both = one.front().cpu();  // a host read, at start and restore only
  const auto* v = both.data_ptr<int64_t>();
  if (v[0] == -v[3] && v[1] == -v[4] && v[2] == -v[5]) return;
  fail(what, "the tensors' sizes differ across the workers (here " + std::to_string(mine[0]) +
                 " tensors of " + std::to_string(mine[1]) + " elements; " +
                 (v[1] == -v[4] ? "the same count but other shapes or dtypes elsewhere"
                                : "from " + std::to_string(-v[4]) + " to " + std::to_string(v[1]) +
                                      " elements across the ranks") +
                 "): the workers build different models or states");
}

void ProcessGroupCollective::broadcast(const std::vector<torch::Tensor>& tensors,
                                       const std::string& what) {
  if (options_.world_size == 1 || tensors.empty()) return;
  check_same_layout(tensors, "broadcast of " + what);
  for (const auto& [dtype, group] : by_dtype(tensors)) {
    std::vector<torch::Tensor> flat{flatten(group, device_)};
    std::unique_ptr<PendingCollective> pending;
    try {
      pending = std::make_unique<Pending>(*this, group_->broadcast(flat));
    } catch (const std::exception& e) {
      fail("broadcast of " + what, e.what());
    }
    pending->wait("broadcast of " + what);
    unflatten_into(flat[0], group);
  }
}

void ProcessGroupCollective::all_reduce_sum(const std::vector<torch::Tensor>& tensors,
                                            const std::string& what) {
  if (options_.world_size == 1 || tensors.empty()) return;
  for (const auto& [dtype, group] : by_dtype(tensors)) {
    torch::Tensor flat = flatten(group, device_);
    std::unique_ptr<PendingCollective> pending;
    try {
      pending = all_reduce_async(flat);
    } catch (const DistributedError& e) {
      fail("all-reduce of " + what, e.what());
    }
    pending->wait("all-reduce of " + what);
    unflatten_into(flat, group);
  }
}

void ProcessGroupCollective::barrier(const std::string& what) {
  if (options_.world_size == 1) return;
  // A one-element all-reduce: Gloo's barrier has no per-call bound here.
  torch::Tensor one = torch::ones({1}, torch::TensorOptions().device(device_));
  all_reduce_async(one)->wait(what);
  if (device_.is_cuda()) one.cpu();  // the barrier is a host wait
}

}  // namespace fastnn::dist
