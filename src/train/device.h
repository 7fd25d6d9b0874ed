// The one place the training device is chosen, and what follows from it:
// the forward pass's precision, and how batches reach the device.
//
// device=auto|cpu|cuda. auto is CUDA when this build's LibTorch has CUDA
// and the machine has a GPU, else the CPU. One process per GPU: the worker
// with LOCAL_RANK r trains on cuda:r. The collective engine follows the
// device (NCCL for CUDA, Gloo for the CPU; chosen in distributed_step.cc).
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>

#include "fastnn/hparams.h"
#include "fastnn/pipeline.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace fastnn::train {

/// Mixed precision of the forward pass (weights, loss and optimizer stay
/// fp32).
enum class Autocast {
  kOff,
  /// use_fp16 on a CPU with AVX512_BF16: bfloat16, as torch.autocast("cpu").
  kCpuBFloat16,
  /// use_fp16 on CUDA: float16 (dynamic loss scaling under loss_scaling=auto).
  kCudaFloat16,
  /// use_fp16 with mixed_precision=bf16 on CUDA: bfloat16, no loss scaling.
  kCudaBFloat16,
};

/// GPUs this process can use: 0 when the LibTorch has no CUDA or the
/// machine no GPU.
int cuda_device_count();

/// The training device of the worker with `local_rank`. ConfigError
/// (exit 2) for device=cuda without a GPU, or a local_rank with no GPU of
/// its own.
torch::Device choose_device(const HParams& hp, int local_rank);

/// Workers to start on this machine when nproc_per_node is not given: the
/// GPU count when training on CUDA (one process per GPU) and there is more
/// than one GPU; otherwise 0 (keep nproc_per_node).
int default_workers_per_machine(const HParams& hp);

/// Makes `device` current for this thread and sets it up for training
/// (cuDNN's autotuner on for CUDA: input shapes are fixed).
void prepare_device(const torch::Device& device);

/// Whether reading a tensor of `device` makes the host wait for it (CUDA),
/// rather than being free (the CPU): a step then reads its numbers only
/// when a hook asks (StepOptions::read_every_step).
bool host_reads_synchronise(const torch::Device& device);

/// The forward pass's precision for `hp` on `device` (no output).
Autocast choose_autocast(const HParams& hp, const torch::Device& device);
/// One line on the chief saying what `autocast` means here (and a warning
/// when use_fp16 asked for more than the machine can do).
void log_autocast(const HParams& hp, Autocast autocast);

/// The device of `module`'s first parameter or buffer (the CPU when it has
/// none).
torch::Device device_of(const torch::nn::Module& module);

/// Hands out the pipeline's batches on the training device. On CUDA the
/// next batch is copied (asynchronously, on a stream of its own, through a
/// small ring of page-locked staging buffers: cuda::make_prefetching_feed)
/// while the current one trains, so the GPU does not wait for a copy. On
/// the CPU it is the pipeline itself, and nothing is page-locked.
class DeviceFeed {
 public:
  virtual ~DeviceFeed() = default;
  /// The next batch on the device; nullopt when the input is exhausted.
  virtual std::optional<datasets::Batch> next() = 0;
};

/// `pipeline` must outlive the feed.
std::unique_ptr<DeviceFeed> make_device_feed(datasets::Pipeline& pipeline,
                                             const torch::Device& device);

}  // namespace fastnn::train
