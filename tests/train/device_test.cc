// Device and precision choice (src/train/device.h): what every build can
// check, with or without a GPU.
#include "src/train/device.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/train/builder.h"
#include "tests/error_of.h"

namespace fastnn::train {
namespace {

// The device options of a command line, as the trainer converts them.
DeviceOptions load(std::vector<std::string> args) {
  std::vector<const char*> argv = {"train_image_classifier"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return device_options(load_hparams(static_cast<int>(argv.size()), argv.data()).hp);
}

std::string config_error(const std::function<void()>& fn) {
  return ::fastnn::testing::error_of<ConfigError>(fn);
}

TEST(Device, CpuIsAlwaysTheCpu) {
  EXPECT_EQ(choose_device(load({"--device=cpu"}), 0), torch::Device(torch::kCPU));
  EXPECT_EQ(choose_device(load({"--device=cpu"}), 3), torch::Device(torch::kCPU));
}

TEST(Device, AutoIsTheWorkersGpuOrTheCpu) {
  const auto hp = load({});
  EXPECT_EQ(hp.device, "auto");
  if (cuda_device_count() == 0) {
    EXPECT_EQ(choose_device(hp, 0), torch::Device(torch::kCPU));
  } else {
    EXPECT_EQ(choose_device(hp, 0), torch::Device(torch::kCUDA, 0));
  }
}

TEST(Device, CudaWithoutAGpuIsAConfigErrorSayingWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  const auto m = config_error([] { choose_device(load({"--device=cuda"}), 0); });
  EXPECT_NE(m.find("device=cuda but"), std::string::npos) << m;
  EXPECT_NE(m.find("command line"), std::string::npos) << m;
}

TEST(Device, ALocalRankBeyondTheGpusIsAConfigErrorUnlessThereIsOne) {
  const int gpus = cuda_device_count();
  if (gpus == 0) GTEST_SKIP() << "no GPU";
  if (gpus == 1) {
    EXPECT_EQ(choose_device(load({"--device=cuda"}), 3), torch::Device(torch::kCUDA, 0));
    return;
  }
  const auto m = config_error([gpus] { choose_device(load({"--device=cuda"}), gpus); });
  EXPECT_NE(m.find("has no GPU of its own"), std::string::npos) << m;
}

// Slurm's --gpus-per-task=1 gives every process one visible GPU while
// SLURM_LOCALID runs up to the tasks per node: each trains on cuda:0.
TEST(Device, OneVisibleGpuIsCuda0WhateverTheLocalRank) {
  const auto hp = load({"--device=cuda"});
  for (int rank : {0, 1, 7}) EXPECT_EQ(cuda_index_for(hp, rank, 1), 0) << rank;
  EXPECT_EQ(cuda_index_for(hp, 0, 8), 0);
  EXPECT_EQ(cuda_index_for(hp, 3, 8), 3);
  EXPECT_EQ(cuda_index_for(hp, 7, 8), 7);
  EXPECT_EQ(cuda_index_for(hp, 1, 2), 1);
}

TEST(Device, ALocalRankBeyondSeveralVisibleGpusIsAConfigErrorNamingBoth) {
  const auto hp = load({"--device=cuda"});
  for (auto [rank, visible] : {std::pair{2, 2}, std::pair{7, 4}}) {
    const auto m = config_error([&] { cuda_index_for(hp, rank, visible); });
    EXPECT_NE(
        m.find("command line: worker LOCAL_RANK " + std::to_string(rank) +
               " has no GPU of its own: this process sees " + std::to_string(visible) + " GPUs"),
        std::string::npos)
        << m;
  }
}

// PyTorch's defaults, set whatever the context held before (a GPU is not
// needed: these are flags of LibTorch's global context).
TEST(Device, CudaMathIsPyTorchsDefaultsWithTheAutotunerFromItsKey) {
  at::Context& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(true);
  ctx.setAllowTF32CuDNN(false);
  ctx.setDeterministicCuDNN(true);
  ctx.setBenchmarkCuDNN(true);
  set_cuda_math(load({}));
  EXPECT_FALSE(ctx.allowTF32CuBLAS());
  EXPECT_TRUE(ctx.allowTF32CuDNN());
  EXPECT_FALSE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  EXPECT_EQ(describe_cuda_math(load({})),
            "TF32 matmul off, cuDNN TF32 on, cudnn.benchmark off, cudnn.deterministic off");
  const auto tuned = load({"--cudnn_benchmark=True"});
  set_cuda_math(tuned);
  EXPECT_TRUE(ctx.benchmarkCuDNN());
  EXPECT_FALSE(ctx.allowTF32CuBLAS());
  EXPECT_EQ(describe_cuda_math(tuned),
            "TF32 matmul off, cuDNN TF32 on, cudnn.benchmark on, cudnn.deterministic off");
  ctx.setBenchmarkCuDNN(false);
}

TEST(Device, UnknownDevicesAndPrecisionsAreRejectedByTheLoader) {
  EXPECT_THROW(load({"--device=tpu"}), ConfigError);
  EXPECT_THROW(load({"--mixed_precision=fp8"}), ConfigError);
}

TEST(Device, PrecisionFollowsTheDevice) {
  const torch::Device cpu(torch::kCPU);
  const torch::Device gpu(torch::kCUDA, 0);
  EXPECT_EQ(choose_autocast(load({"--use_fp16=False"}), cpu), Autocast::kOff);
  EXPECT_EQ(choose_autocast(load({"--use_fp16=False"}), gpu), Autocast::kOff);
  // float16 needs no question to the GPU; bf16 asks for its capability.
  EXPECT_EQ(choose_autocast(load({"--use_fp16=True"}), gpu), Autocast::kCudaFloat16);
  EXPECT_EQ(choose_autocast(load({"--use_fp16=True", "--mixed_precision=fp16"}), gpu),
            Autocast::kCudaFloat16);
  const auto on_cpu = choose_autocast(load({"--use_fp16=True", "--mixed_precision=bf16"}), cpu);
  EXPECT_TRUE(on_cpu == Autocast::kCpuBFloat16 || on_cpu == Autocast::kOff);
}

}  // namespace
}  // namespace fastnn::train
