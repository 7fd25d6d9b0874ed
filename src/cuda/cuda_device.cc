#include "src/cuda/cuda_device.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <vector>

#include "fastnn/errors.h"
#include "src/log/log.h"
#include "src/train/staging_ring.h"

namespace fastnn::cuda {
namespace {

std::string megabytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Page-locked host memory of its own (cudaHostAlloc), not LibTorch's
// pinned allocator, which rounds every block up to a power of two (a
// 154 MB batch would pin 256 MB) and keeps it cached for the process.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }

  char* data() const { return static_cast<char*>(ptr_); }

  // At least `bytes`; what it held is lost. Throws OutOfMemoryError (exit 7)
  // when the host cannot page-lock that much.
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    release();
    if (cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault) != cudaSuccess) {
      (void)cudaGetLastError();  // the error is reported here, not by the next call
      ptr_ = nullptr;
      throw OutOfMemoryError("could not page-lock " + megabytes(bytes) +
                             " of host memory for the input's staging buffers "
                             "(cudaHostAlloc); lower batch_size");
    }
    bytes_ = bytes;
  }

 private:
  void release() {
    if (ptr_) (void)cudaFreeHost(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class PrefetchingFeed : public train::DeviceFeed {
 public:
  PrefetchingFeed(datasets::Pipeline& pipeline, const torch::Device& device)
      : pipeline_(pipeline),
        device_(device),
        copy_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())),
        ring_(kPinnedStagingBatches),
        staging_(kPinnedStagingBatches) {}

  ~PrefetchingFeed() override {
    // A staging buffer may still be read by a copy: wait for them all
    // before the memory goes back (once per feed). After a CUDA error the
    // device is lost anyway: nothing to wait for.
    try {
      for (int i = 0; i < ring_.slots(); ++i) ring_.event(i).synchronize();
    } catch (const c10::Error&) {
    }
    if (ring_.host_waits() > 0) {
      log::info() << "input: the host waited " << ring_.host_waits()
                  << " time(s) for a host-to-device copy to free a pinned staging buffer";
    }
  }

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
    ring_.event(ahead_slot_).block(training);
    for (const auto* t : {&batch.images, &batch.labels}) {
      c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), training);
    }
    launch();
    return batch;
  }

 private:
  // Takes the next (pageable) host batch, copies it into a free pinned
  // staging buffer and starts its copy to the device from there.
  void launch() {
    auto host = pipeline_.next();
    if (!host) return;
    const size_t image_bytes = host->images.nbytes();
    const size_t label_bytes = host->labels.nbytes();
    // Labels after the images, 256-byte aligned.
    const size_t label_offset = (image_bytes + 255) / 256 * 256;
    const size_t bytes = label_offset + label_bytes;
    if (staging_bytes_ == 0) {
      // Sized by the first batch (training batches are all full); a larger
      // one later grows its slot.
      staging_bytes_ = bytes;
      log_budget(bytes);
    }
    const int slot = ring_.acquire();
    PinnedBuffer& buffer = staging_[static_cast<size_t>(slot)];
    buffer.reserve(std::max(bytes, staging_bytes_));
    // A byte copy (the parallel CPU kernel): the preprocessing's numbers
    // reach the device unchanged.
    auto images = stage(host->images, buffer.data());
    auto labels = stage(host->labels, buffer.data() + label_offset);
    c10::cuda::CUDAStreamGuard guard(copy_stream_);
    // Both allocated before either copy is enqueued: an allocation that
    // fails leaves the slot unread, as acquire() assumes.
    datasets::Batch batch;
    batch.index = host->index;
    batch.images = torch::empty(images.sizes(), images.options().device(device_));
    batch.labels = torch::empty(labels.sizes(), labels.options().device(device_));
    copy(images, batch.images);
    copy(labels, batch.labels);
    ring_.event(slot).record(copy_stream_);
    ring_.submit(slot);
    ahead_ = std::move(batch);
    ahead_slot_ = slot;
  }

  // `t` copied into pinned memory at `at`, as a CPU tensor viewing it.
  static torch::Tensor stage(const torch::Tensor& t, char* at) {
    auto view = torch::from_blob(at, t.sizes(), torch::TensorOptions().dtype(t.scalar_type()));
    view.copy_(t);
    return view;
  }

  // Enqueues the copy of pinned `host` on the copy stream.
  void copy(const torch::Tensor& host, const torch::Tensor& device) const {
    C10_CUDA_CHECK(cudaMemcpyAsync(device.data_ptr(), host.data_ptr(), host.nbytes(),
                                   cudaMemcpyHostToDevice, copy_stream_.stream()));
  }

  // The budget, once per process and batch size (a run that evaluates
  // makes a feed per evaluation).
  static void log_budget(size_t bytes) {
    static std::atomic<size_t> last_logged{0};
    if (last_logged.exchange(bytes) == bytes) return;
    log::chief() << "input: pinned host memory " << kPinnedStagingBatches << " staging batches x "
                 << megabytes(bytes) << " = " << megabytes(kPinnedStagingBatches * bytes)
                 << " for this feed; the prefetched batches (prefetch_buffer_size) stay in "
                    "pageable memory";
  }

  datasets::Pipeline& pipeline_;
  torch::Device device_;
  c10::cuda::CUDAStream copy_stream_;
  train::StagingRing<at::cuda::CUDAEvent> ring_;
  std::vector<PinnedBuffer> staging_;
  size_t staging_bytes_ = 0;
  std::optional<datasets::Batch> ahead_;
  int ahead_slot_ = 0;
  bool started_ = false;
};

}  // namespace

void set_device(const torch::Device& device) { c10::cuda::set_device(device.index()); }

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
