// LibTorch's default random generators, saved and put back together: the
// CPU's always and, for a CUDA device, that GPU's too (randn and dropout on
// a GPU draw from it, not from the CPU's). Wherever the CPU generator is
// saved for an exact resume or an invisible probe, the GPU's must be too.
//
// Compiles against a CPU-only LibTorch: a GPU's generator is reached through
// at::globalContext().defaultGenerator, which exists in every build and
// throws only when called without CUDA, and it is called only for a CUDA
// device.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <mutex>

namespace fastnn::train {

/// The default generator of `device`'s type and index (the CPU's for the
/// CPU).
inline at::Generator default_generator(const c10::Device& device) {
  if (device.is_cpu()) return at::detail::getDefaultCPUGenerator();
  return at::globalContext().defaultGenerator(device);
}

/// A copy of the state of `device`'s default generator (a byte tensor on
/// the CPU).
inline at::Tensor generator_state(const c10::Device& device) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

/// Puts back a state generator_state(device) returned.
inline void set_generator_state(const c10::Device& device, const at::Tensor& state) {
  at::Generator gen = default_generator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

/// Saves the CPU generator and, when `device` is a GPU, its generator; puts
/// both back when it goes out of scope, whatever happened in between.
class RngGuard {
 public:
  explicit RngGuard(const c10::Device& device)
      : device_(device), cpu_(generator_state(c10::Device(c10::kCPU))) {
    if (device_.is_cuda()) gpu_ = generator_state(device_);
  }
  RngGuard(const RngGuard&) = delete;
  RngGuard& operator=(const RngGuard&) = delete;
  ~RngGuard() {
    set_generator_state(c10::Device(c10::kCPU), cpu_);
    if (gpu_.defined()) set_generator_state(device_, gpu_);
  }

 private:
  c10::Device device_;
  at::Tensor cpu_, gpu_;
};

}  // namespace fastnn::train
