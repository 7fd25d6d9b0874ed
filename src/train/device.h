// The one place the training device is chosen, and what follows from it:
// the forward pass's precision, and how batches reach the device.
//
// device=auto|cpu|cuda. auto is CUDA when this build's LibTorch has CUDA
// and the machine has a GPU, else the CPU. One process per GPU: the worker
// with LOCAL_RANK r trains on cuda:r, or on cuda:0 when it sees only one
// GPU (cuda_index_for). The collective engine follows the device (NCCL for
// CUDA, Gloo for the CPU; chosen in distributed_step.cc).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// What the device and its precision follow, converted from the
/// hyperparameters once (builder.h's device_options), with the file:line
/// of the keys an error names.
struct DeviceOptions {
  /// auto, cpu or cuda.
  std::string device = "auto";
  bool use_fp16 = false;
  /// fp16 or bf16: the CUDA autocast type under use_fp16.
  std::string mixed_precision = "fp16";
  bool cudnn_benchmark = false;
  /// nproc_per_node was given: default_workers_per_machine leaves it.
  bool nproc_per_node_given = false;
  /// Where device and mixed_precision were set ("file:line", "command
  /// line" or "default"), for the errors.
  std::string device_where = "default";
  std::string mixed_precision_where = "default";
};

/// GPUs this process can use: 0 when the LibTorch has no CUDA or the
/// machine no GPU.
int cuda_device_count();

/// The CUDA index of the worker with `local_rank` in a process that sees
/// `visible` (>= 1) GPUs: 0 when it sees one (Slurm's --gpus-per-task=1 or
/// a per-process CUDA_VISIBLE_DEVICES, whatever the local rank),
/// local_rank when visible > local_rank, else a ConfigError (exit 2)
/// naming both numbers.
int cuda_index_for(const DeviceOptions& options, int local_rank, int visible);

/// The training device of the worker with `local_rank`. ConfigError
/// (exit 2) for device=cuda without a GPU, or a local_rank with no GPU of
/// its own (cuda_index_for).
torch::Device choose_device(const DeviceOptions& options, int local_rank);

/// Workers to start on this machine when nproc_per_node is not given: the
/// GPU count when training on CUDA (one process per GPU) and there is more
/// than one GPU; otherwise 0 (keep nproc_per_node).
int default_workers_per_machine(const DeviceOptions& options);

/// CUDA's math settings, set explicitly to PyTorch's defaults (so a
/// comparison with a PyTorch script compares the same arithmetic): float32
/// matmuls in full fp32 (no TF32, torch.backends.cuda.matmul.allow_tf32 =
/// False since PyTorch 1.12), cuDNN convolutions may use TF32
/// (torch.backends.cudnn.allow_tf32 = True), cuDNN nondeterministic
/// algorithms allowed (cudnn.deterministic = False), and cuDNN's
/// autotuner as options.cudnn_benchmark says (PyTorch's default: off). Only
/// flags of LibTorch's global context: callable, and testable, without a
/// GPU.
void set_cuda_math(const DeviceOptions& options);

/// The settings set_cuda_math(options) makes: "TF32 matmul off, cuDNN TF32 on,
/// cudnn.benchmark off, cudnn.deterministic off". Not read back from the
/// context: from LibTorch 2.9 on, its TF32 getters print a deprecation
/// warning.
std::string describe_cuda_math(const DeviceOptions& options);

/// Makes `device` current for this thread and sets it up (set_cuda_math,
/// and one line on the chief saying what it set); nothing for the CPU.
void prepare_device(const DeviceOptions& options, const torch::Device& device);

/// Whether reading a tensor of `device` makes the host wait for it (CUDA),
/// rather than being free (the CPU): a step then reads its numbers only
/// when a hook asks (StepOptions::read_every_step).
bool host_reads_synchronise(const torch::Device& device);

/// The forward pass's precision for `options` on `device` (no output).
Autocast choose_autocast(const DeviceOptions& options, const torch::Device& device);
/// One line on the chief saying what `autocast` means here (and a warning
/// when use_fp16 asked for more than the machine can do).
void log_autocast(const DeviceOptions& options, Autocast autocast);

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

/// synthetic_device_inputs: one batch of `batch` images of shape `chw`,
/// uniform in [-1, 1) as the mock dataset's, with labels in [0, classes),
/// drawn once on `device` from `seed` and returned by every next().
std::unique_ptr<DeviceFeed> make_synthetic_feed(int64_t batch, std::vector<int64_t> chw,
                                                int64_t classes, const torch::Device& device,
                                                uint64_t seed);

}  // namespace fastnn::train
