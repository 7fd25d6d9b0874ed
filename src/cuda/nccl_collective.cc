#include "src/cuda/nccl_collective.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "fastnn/errors.h"

namespace fastnn::dist {
namespace {

NcclType nccl_type(const torch::Tensor& t, const std::string& what) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return NcclType::kFloat32;
    case torch::kFloat16:
      return NcclType::kFloat16;
    case torch::kBFloat16:
      return NcclType::kBFloat16;
    case torch::kFloat64:
      return NcclType::kFloat64;
    case torch::kInt64:
      return NcclType::kInt64;
    default:
      throw DistributedError(what + ": NCCL collectives here take float32/16, bfloat16, "
                             "float64 or int64 tensors, not " +
                             std::string(c10::toString(t.scalar_type())));
  }
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(KeyValueStore& store, const NcclOptions& options)
      : options_(options),
        device_(torch::kCUDA, static_cast<c10::DeviceIndex>(options.device)),
        comm_(store, options),
        stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/true,
                                             static_cast<c10::DeviceIndex>(options.device))) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  std::string backend() const override { return "NCCL"; }
  void set_step(int64_t step) override { step_ = step; }

  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) override {
    run(tensors, what, [this, &what](const torch::Tensor& t) {
      comm_.broadcast(t.data_ptr(), static_cast<size_t>(t.numel()), nccl_type(t, what), raw());
    });
  }

  void all_reduce_sum(const std::vector<torch::Tensor>& tensors,
                      const std::string& what) override {
    run(tensors, what, [this, &what](const torch::Tensor& t) {
      comm_.all_reduce_sum(t.data_ptr(), static_cast<size_t>(t.numel()), nccl_type(t, what),
                           raw());
    });
  }

  std::unique_ptr<PendingCollective> all_reduce_async(torch::Tensor flat) override {
    if (!flat.is_cuda() || flat.device() != device_ || !flat.is_contiguous()) {
      throw DistributedError("NCCL all-reduce: the gradient bucket must be a contiguous tensor "
                             "on " + device_.str() + ", not " + flat.device().str());
    }
    // Backward wrote the bucket on the current stream: the NCCL stream
    // waits for it on the GPU, so the host goes on with backward.
    after_current_stream();
    comm_.all_reduce_sum(flat.data_ptr(), static_cast<size_t>(flat.numel()),
                         nccl_type(flat, "gradient bucket"), raw());
    c10::cuda::CUDACachingAllocator::recordStream(flat.storage().data_ptr(), stream_);
    return std::make_unique<Pending>(*this);
  }

  void barrier(const std::string& what) override {
    auto one = torch::ones({1}, torch::TensorOptions().device(device_));
    all_reduce_sum({one}, what);
  }

 private:
  class Pending final : public PendingCollective {
   public:
    explicit Pending(NcclCollective& owner) : owner_(owner) {}
    void wait(const std::string& what) override { owner_.finish(what); }

   private:
    NcclCollective& owner_;
  };

  void* raw() const { return static_cast<void*>(stream_.stream()); }

  void after_current_stream() {
    at::cuda::CUDAEvent ready;
    ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    ready.block(stream_);
  }

  // Waits (bounded, polling NCCL's error state) until the NCCL stream has
  // finished everything enqueued on it.
  void finish(const std::string& what) {
    comm_.synchronize(raw(), "rank " + std::to_string(options_.rank) + ": " + what +
                                 " (NCCL, global step " + std::to_string(step_) + ")");
  }

  // One collective per tensor, in order; CPU (or non-contiguous) tensors
  // are staged through a contiguous copy on the device and copied back.
  template <typename Op>
  void run(const std::vector<torch::Tensor>& tensors, const std::string& what, Op op) {
    torch::NoGradGuard no_grad;
    c10::cuda::CUDAGuard guard(device_);
    std::vector<std::pair<torch::Tensor, torch::Tensor>> staged;
    std::vector<torch::Tensor> work;
    work.reserve(tensors.size());
    for (const auto& t : tensors) {
      if (t.is_cuda() && t.device() == device_ && t.is_contiguous()) {
        work.push_back(t);
      } else {
        auto d = t.to(device_).contiguous();
        staged.emplace_back(t, d);
        work.push_back(d);
      }
    }
    after_current_stream();
    for (const auto& t : work) {
      if (t.numel() > 0) op(t);
    }
    finish(what);
    for (auto& [original, on_device] : staged) original.copy_(on_device);
  }

  NcclOptions options_;
  torch::Device device_;
  NcclCommunicator comm_;
  c10::cuda::CUDAStream stream_;
  int64_t step_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_nccl_collective(KeyValueStore& store,
                                                 const NcclOptions& options) {
  return std::make_unique<NcclCollective>(store, options);
}

}  // namespace fastnn::dist
