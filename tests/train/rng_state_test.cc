// The default generators are put back wherever they are saved: by
// RngGuard, around BatchNormPool's measurement (which draws its probe
// image on the model's device), and through a checkpoint. The GPU cases
// run only where there is one (the CUDA build's `unit` run on a GPU
// machine); without one they report themselves skipped.
#include "src/train/rng_state.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "models/layers.h"
#include "src/train/batch_norm_pool.h"

namespace fastnn::train {
namespace {

// The next numbers `device`'s default generator gives.
torch::Tensor draw(const torch::Device& device) {
  return torch::randn({16}, torch::TensorOptions().device(device)).cpu();
}

// A module with one BatchNorm over 3 channels.
struct BnNet : torch::nn::Module {
  BnNet() { bn = register_module("bn", models::TfBatchNorm(3, models::BatchNormOptions{})); }
  models::TfBatchNorm bn{nullptr};
};

void expect_guard_restores(const torch::Device& device) {
  torch::manual_seed(21);
  const auto expected = draw(device);
  torch::manual_seed(21);
  {
    RngGuard guard(device);
    draw(device);
    draw(torch::Device(torch::kCPU));
  }
  EXPECT_TRUE(draw(device).equal(expected)) << device;
}

void expect_measurement_leaves_generators(const torch::Device& device) {
  BnNet net;
  net.to(device);
  BatchNormPool pool(net);
  ASSERT_EQ(pool.size(), 1u);
  torch::manual_seed(5);
  const auto cpu_expected = draw(torch::Device(torch::kCPU));
  const auto device_expected = draw(device);
  torch::manual_seed(5);
  pool.measure_counts([&](const torch::Tensor& x) { net.bn->forward(x); }, {3, 4, 4});
  ASSERT_EQ(pool.counts().size(), 1u);  // it measured
  EXPECT_TRUE(draw(torch::Device(torch::kCPU)).equal(cpu_expected));
  EXPECT_TRUE(draw(device).equal(device_expected)) << device;
}

bool have_gpu() { return torch::cuda::is_available(); }

TEST(RngState, GuardPutsTheCpuGeneratorBack) { expect_guard_restores(torch::Device(torch::kCPU)); }

TEST(RngState, GuardPutsTheGpuGeneratorBack) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  expect_guard_restores(torch::Device(torch::kCUDA, 0));
}

TEST(RngState, StateRoundTripsOnTheCpu) {
  const torch::Device cpu(torch::kCPU);
  torch::manual_seed(3);
  const auto state = generator_state(cpu);
  const auto first = draw(cpu);
  set_generator_state(cpu, state);
  EXPECT_TRUE(draw(cpu).equal(first));
}

TEST(RngState, BatchNormMeasurementLeavesTheCpuGeneratorAsItWas) {
  expect_measurement_leaves_generators(torch::Device(torch::kCPU));
}

TEST(RngState, BatchNormMeasurementLeavesTheGpuGeneratorAsItWas) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  expect_measurement_leaves_generators(torch::Device(torch::kCUDA, 0));
}

}  // namespace
}  // namespace fastnn::train
