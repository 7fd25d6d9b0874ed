#include "src/train/device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/torch.h>

#include <string>

#include "fastnn/errors.h"
#include "src/log/log.h"

#if FASTNN_WITH_CUDA
#include "src/cuda/cuda_device.h"
#endif

namespace fastnn::train {
namespace {

// PyTorch's defaults (torch.backends.cuda.matmul.allow_tf32,
// torch.backends.cudnn.allow_tf32, torch.backends.cudnn.deterministic).
constexpr bool kTf32Matmul = false;
constexpr bool kTf32CuDNN = true;
constexpr bool kDeterministicCuDNN = false;

bool cpu_has_bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}

// The pipeline's own batches: the CPU trains on them where they are.
class HostFeed : public DeviceFeed {
 public:
  explicit HostFeed(datasets::Pipeline& pipeline) : pipeline_(pipeline) {}
  std::optional<datasets::Batch> next() override { return pipeline_.next(); }

 private:
  datasets::Pipeline& pipeline_;
};

}  // namespace

int cuda_device_count() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

torch::Device choose_device(const DeviceOptions& o, int local_rank) {
  if (o.device == "cpu") return torch::Device(torch::kCPU);
  const int gpus = cuda_device_count();
  if (gpus == 0) {
    if (o.device == "auto") return torch::Device(torch::kCPU);
#if FASTNN_WITH_CUDA
    const std::string why =
        "this machine has no usable CUDA device (no GPU, no driver, or "
        "CUDA_VISIBLE_DEVICES hides them)";
#else
    const std::string why =
        "this build's LibTorch has no CUDA (configure with a CUDA "
        "LibTorch: scripts/setup.sh --torch DIR)";
#endif
    throw ConfigError(o.device_where + ": device=cuda but " + why);
  }
  return torch::Device(torch::kCUDA,
                       static_cast<c10::DeviceIndex>(cuda_index_for(o, local_rank, gpus)));
}

int cuda_index_for(const DeviceOptions& o, int local_rank, int visible) {
  if (visible == 1) return 0;
  if (local_rank >= 0 && local_rank < visible) return local_rank;
  throw ConfigError(o.device_where + ": worker LOCAL_RANK " + std::to_string(local_rank) +
                    " has no GPU of its own: this process sees " + std::to_string(visible) +
                    " GPUs (one process per GPU; lower nproc_per_node, give each process one "
                    "GPU, or set device=cpu)");
}

int default_workers_per_machine(const DeviceOptions& o) {
  if (o.nproc_per_node_given || o.device == "cpu") return 0;
  const int gpus = cuda_device_count();
  return gpus > 1 ? gpus : 0;
}

void set_cuda_math(const DeviceOptions& o) {
  // The legacy setters: every LibTorch has them, and from 2.9 on they set
  // the new fp32_precision state too (without its deprecation warning,
  // which only the legacy getters print).
  at::Context& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(kTf32Matmul);
  ctx.setAllowTF32CuDNN(kTf32CuDNN);
  ctx.setDeterministicCuDNN(kDeterministicCuDNN);
  ctx.setBenchmarkCuDNN(o.cudnn_benchmark);
}

std::string describe_cuda_math(const DeviceOptions& o) {
  auto on = [](bool b) { return b ? "on" : "off"; };
  return std::string("TF32 matmul ") + on(kTf32Matmul) + ", cuDNN TF32 " + on(kTf32CuDNN) +
         ", cudnn.benchmark " + on(o.cudnn_benchmark) + ", cudnn.deterministic " +
         on(kDeterministicCuDNN);
}

void prepare_device(const DeviceOptions& o, const torch::Device& device) {
  if (!device.is_cuda()) return;
#if FASTNN_WITH_CUDA
  cuda::set_device(device);
#endif
  set_cuda_math(o);
  log::chief() << "CUDA math (PyTorch's defaults unless cudnn_benchmark is set): "
               << describe_cuda_math(o);
}

Autocast choose_autocast(const DeviceOptions& o, const torch::Device& device) {
  if (!o.use_fp16) return Autocast::kOff;
  if (device.is_cuda()) {
    if (o.mixed_precision != "bf16") return Autocast::kCudaFloat16;
#if FASTNN_WITH_CUDA
    if (!cuda::has_bfloat16(device)) {
      throw ConfigError(o.mixed_precision_where +
                        ": mixed_precision=bf16 needs a GPU with "
                        "bfloat16 (compute capability 8.0 or newer); " +
                        device.str() + " is " + cuda::describe(device) +
                        ": use mixed_precision=fp16");
    }
#endif
    return Autocast::kCudaBFloat16;
  }
  return cpu_has_bf16() ? Autocast::kCpuBFloat16 : Autocast::kOff;
}

void log_autocast(const DeviceOptions& o, Autocast autocast) {
  switch (autocast) {
    case Autocast::kOff:
      if (o.use_fp16) {
        log::warning() << "use_fp16=True but this CPU has no bfloat16 instructions "
                          "(AVX512_BF16); training in fp32";
      }
      return;
    case Autocast::kCpuBFloat16:
      log::chief() << "use_fp16=True: bfloat16 autocast on CPU (fp32 weights)";
      return;
    case Autocast::kCudaFloat16:
      log::chief() << "use_fp16=True: float16 autocast on CUDA (fp32 master weights)";
      return;
    case Autocast::kCudaBFloat16:
      log::chief() << "use_fp16=True, mixed_precision=bf16: bfloat16 autocast on CUDA "
                      "(fp32 master weights)";
      return;
  }
}

torch::Device device_of(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) return p.device();
  for (const auto& b : module.buffers()) return b.device();
  return torch::Device(torch::kCPU);
}

std::unique_ptr<DeviceFeed> make_device_feed(datasets::Pipeline& pipeline,
                                             const torch::Device& device) {
#if FASTNN_WITH_CUDA
  if (device.is_cuda()) return cuda::make_prefetching_feed(pipeline, device);
#endif
  return std::make_unique<HostFeed>(pipeline);
}

namespace {

class SyntheticFeed : public DeviceFeed {
 public:
  explicit SyntheticFeed(datasets::Batch batch) : batch_(std::move(batch)) {}
  std::optional<datasets::Batch> next() override {
    datasets::Batch b = batch_;
    b.index = index_++;
    return b;
  }

 private:
  datasets::Batch batch_;
  int64_t index_ = 0;
};

}  // namespace

std::unique_ptr<DeviceFeed> make_synthetic_feed(int64_t batch, std::vector<int64_t> chw,
                                                int64_t classes, const torch::Device& device,
                                                uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  chw.insert(chw.begin(), batch);
  datasets::Batch b;
  // Drawn on the CPU from its own generator (the training RNG is left
  // alone), then copied once.
  b.images = (torch::rand(chw, gen) * 2 - 1).to(device);
  b.labels = torch::randint(0, classes, {batch}, gen, torch::kInt64).to(device);
  return std::make_unique<SyntheticFeed>(std::move(b));
}

bool host_reads_synchronise(const torch::Device& device) { return device.is_cuda(); }

}  // namespace fastnn::train
