#include "src/cuda/cuda_device.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <optional>

namespace fastnn::cuda {
namespace {

class PrefetchingFeed : public train::DeviceFeed {
 public:
  PrefetchingFeed(datasets::Pipeline& pipeline, const torch::Device& device)
      : pipeline_(pipeline),
        device_(device),
        copy_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}

  std::optional<datasets::Batch> next() override {
    if (!started_) {
      started_ = true;
      launch();
    }
    if (!ahead_) return std::nullopt;
    datasets::Batch batch = std::move(*ahead_);
    ahead_.reset();
    // The training stream waits on the GPU for the copy; the tensors were
    // allocated on the copy stream, so the allocator must also know the
    // training stream uses them before it reuses their memory.
    const auto training = c10::cuda::getCurrentCUDAStream(device_.index());
    copied_.block(training);
    for (const auto* t : {&batch.images, &batch.labels}) {
      c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), training);
    }
    launch();
    return batch;
  }

 private:
  // Takes the next host batch and starts its copy.
  void launch() {
    auto host = pipeline_.next();
    if (!host) return;
    c10::cuda::CUDAStreamGuard guard(copy_stream_);
    datasets::Batch b;
    b.index = host->index;
    b.images = host->images.to(device_, /*non_blocking=*/true);
    b.labels = host->labels.to(device_, /*non_blocking=*/true);
    copied_.record(copy_stream_);
    ahead_ = std::move(b);
  }

  datasets::Pipeline& pipeline_;
  torch::Device device_;
  c10::cuda::CUDAStream copy_stream_;
  at::cuda::CUDAEvent copied_;
  std::optional<datasets::Batch> ahead_;
  bool started_ = false;
};

}  // namespace

void set_device(const torch::Device& device) {
  c10::cuda::set_device(device.index());
}

bool has_bfloat16(const torch::Device& device) {
  return at::cuda::getDeviceProperties(device.index())->major >= 8;
}

std::string describe(const torch::Device& device) {
  const auto* p = at::cuda::getDeviceProperties(device.index());
  char tail[96];
  std::snprintf(tail, sizeof tail, ", compute capability %d.%d, %.1f GiB", p->major, p->minor,
                static_cast<double>(p->totalGlobalMem) / (1024.0 * 1024 * 1024));
  return std::string(p->name) + tail;
}

std::string allocator_use(const torch::Device& device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  // Index 0: the aggregate over the small and large pools.
  char text[128];
  std::snprintf(text, sizeof text,
                "%.1f GiB allocated, %.1f GiB reserved by LibTorch's caching allocator",
                static_cast<double>(stats.allocated_bytes[0].current) / (1024.0 * 1024 * 1024),
                static_cast<double>(stats.reserved_bytes[0].current) / (1024.0 * 1024 * 1024));
  return text;
}

std::unique_ptr<train::DeviceFeed> make_prefetching_feed(datasets::Pipeline& pipeline,
                                                         const torch::Device& device) {
  return std::make_unique<PrefetchingFeed>(pipeline, device);
}

}  // namespace fastnn::cuda
