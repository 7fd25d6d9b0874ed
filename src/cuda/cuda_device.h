// CUDA-only pieces of device placement, behind src/train/device.h. Built
// only with a CUDA LibTorch (FASTNN_WITH_CUDA).
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>

#include "src/train/device.h"

namespace fastnn::cuda {

/// Makes `device` this thread's current CUDA device.
void set_device(const torch::Device& device);
/// Compute capability 8.0 or newer (native bfloat16).
bool has_bfloat16(const torch::Device& device);
/// "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB".
std::string describe(const torch::Device& device);

/// "12.3 GiB allocated, 14.0 GiB reserved by LibTorch's caching allocator".
std::string allocator_use(const torch::Device& device);

/// Page-locked staging buffers of a prefetching feed: its pinned host
/// memory is this many batches (images and labels), whatever
/// prefetch_buffer_size. Two suffice: the next batch's copy reads one while
/// the host fills the other.
constexpr int kPinnedStagingBatches = 2;

/// The pipeline's (pageable) batches copied to `device` one batch ahead,
/// through kPinnedStagingBatches reusable pinned buffers, on a stream of
/// its own; the training stream waits for the copy's event, not the host.
/// A buffer is refilled once the copy that read it has completed
/// (train::StagingRing): the host waits only if every buffer's copy is
/// still in flight.
std::unique_ptr<train::DeviceFeed> make_prefetching_feed(datasets::Pipeline& pipeline,
                                                         const torch::Device& device);

}  // namespace fastnn::cuda
