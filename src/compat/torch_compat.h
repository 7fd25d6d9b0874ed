// The LibTorch calls that differ between the versions this project builds
// against (Debian 12's 1.13 through current 2.x), in one place, so the rest
// of the code reads the same on every version.
//
// Checked against the 1.13 and 2.6 headers (Debian 12 and 13). The version
// gate below is the first version known to have the new call; older calls
// stay available (deprecated) up to it.
//   - Autocast: set_cpu_enabled / set_autocast_cpu_dtype (CPU) and
//     set_enabled / set_autocast_gpu_dtype (CUDA) became
//     set_autocast_enabled / set_autocast_dtype taking a device type; 2.6
//     keeps the old names as wrappers that warn on every call.
//   - TCPStore: 2.x prefers a libuv backend (TCPStoreOptions::useLibUV,
//     default true) that Debian's build does not have.
// Also different, and handled where it is used: ProcessGroupGloo derives
// from ProcessGroup in 1.13 and from Backend in 2.x (c10d_compat.h
// holds the concrete type, which works on both), and Module::zero_grad()'s
// default set_to_none became true (callers pass it explicitly).
#pragma once

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <atomic>
#include <type_traits>
#include <utility>
#include <vector>

#define FASTNN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||         \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace fastnn::compat {

/// Switches autocast on `device` (kCPU or kCUDA) on (with `dtype`) or off
/// for this thread.
inline void set_autocast(c10::DeviceType device, bool enabled, at::ScalarType dtype) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  if (enabled) at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

/// Switches CPU autocast on (with `dtype`) or off for this thread.
inline void set_cpu_autocast(bool enabled, at::ScalarType dtype = at::kBFloat16) {
  set_autocast(c10::DeviceType::CPU, enabled, dtype);
}

/// Whether CPU autocast is on for this thread.
inline bool cpu_autocast_enabled() {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  return at::autocast::is_autocast_enabled(c10::DeviceType::CPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

/// The fused multi-tensor kernels (_foreach_*) serve CUDA tensors where
/// this LibTorch has every one the step uses (2.6 is the oldest checked).
/// CPU tensors keep their per-tensor loops: the same arithmetic element by
/// element, and CPU checkpoints stay byte-identical.
constexpr bool kHasForeach = FASTNN_TORCH_AT_LEAST(2, 6);

/// Tests only: the fused path for every tensor, CPU ones included (the
/// code CUDA runs, checked against the per-tensor loops on any machine;
/// before 2.6 it runs through the wrappers' per-tensor fallbacks).
inline std::atomic<bool> foreach_on_cpu_for_tests{false};

/// True when tensors on `device` take the fused path.
inline bool use_foreach(const c10::Device& device) {
  return (kHasForeach && device.is_cuda()) || foreach_on_cpu_for_tests.load();
}

/// dst[i].copy_(src[i]) for every i: one fused launch where available.
inline void foreach_copy(at::TensorList dst, at::TensorList src) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_copy_(dst, src);
#else
  for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
#endif
}

/// Each tensor's 2-norm; one fused launch where available.
inline std::vector<at::Tensor> foreach_norm(at::TensorList tensors) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  return at::_foreach_norm(tensors);
#else
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.norm());
  return out;
#endif
}

/// t.mul_(factor) for every t; one fused launch where available.
inline void foreach_mul_(at::TensorList tensors, double factor) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_mul_(tensors, factor);
#else
  for (const auto& t : tensors) t.mul_(factor);
#endif
}

/// t.mul_(factor) for every t, `factor` a 0-d tensor on their device (no
/// host read); one fused launch where available.
inline void foreach_mul_(at::TensorList tensors, const at::Tensor& factor) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_mul_(tensors, factor);
#else
  for (const auto& t : tensors) t.mul_(factor);
#endif
}

/// t.add_(o, alpha) for every pair; one fused launch where available.
inline void foreach_add_(at::TensorList tensors, at::TensorList others, double alpha = 1.0) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_add_(tensors, others, alpha);
#else
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].add_(others[i], alpha);
#endif
}

/// t.add_(scalar) for every t; one fused launch where available.
inline void foreach_add_(at::TensorList tensors, double scalar) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_add_(tensors, scalar);
#else
  for (const auto& t : tensors) t.add_(scalar);
#endif
}

/// t + scalar for every t (new tensors); one fused launch where available.
inline std::vector<at::Tensor> foreach_add(at::TensorList tensors, double scalar) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  return at::_foreach_add(tensors, scalar);
#else
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t + scalar);
  return out;
#endif
}

/// t.mul_(o) for every pair; one fused launch where available.
inline void foreach_mul_(at::TensorList tensors, at::TensorList others) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_mul_(tensors, others);
#else
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].mul_(others[i]);
#endif
}

/// t.div_(o) for every pair; one fused launch where available.
inline void foreach_div_(at::TensorList tensors, at::TensorList others) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_div_(tensors, others);
#else
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].div_(others[i]);
#endif
}

/// t / o for every pair (new tensors); one fused launch where available.
inline std::vector<at::Tensor> foreach_div(at::TensorList tensors, at::TensorList others) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  return at::_foreach_div(tensors, others);
#else
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) out.push_back(tensors[i] / others[i]);
  return out;
#endif
}

/// t.sqrt_() for every t; one fused launch where available.
inline void foreach_sqrt_(at::TensorList tensors) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_sqrt_(tensors);
#else
  for (const auto& t : tensors) t.sqrt_();
#endif
}

/// t.sqrt() for every t (new tensors); one fused launch where available.
inline std::vector<at::Tensor> foreach_sqrt(at::TensorList tensors) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  return at::_foreach_sqrt(tensors);
#else
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.sqrt());
  return out;
#endif
}

/// t.addcmul_(a, b, value) for every triple; one fused launch where available.
inline void foreach_addcmul_(at::TensorList tensors, at::TensorList a, at::TensorList b,
                             double value) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_addcmul_(tensors, a, b, value);
#else
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].addcmul_(a[i], b[i], value);
#endif
}

/// t.addcdiv_(a, b, value) for every triple; one fused launch where available.
inline void foreach_addcdiv_(at::TensorList tensors, at::TensorList a, at::TensorList b,
                             double value) {
#if FASTNN_TORCH_AT_LEAST(2, 6)
  at::_foreach_addcdiv_(tensors, a, b, value);
#else
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].addcdiv_(a[i], b[i], value);
#endif
}

namespace detail {
template <typename T, typename = void>
struct HasUseLibUV : std::false_type {};
template <typename T>
struct HasUseLibUV<T, std::void_t<decltype(std::declval<T&>().useLibUV)>> : std::true_type {};
}  // namespace detail

/// TCPStore options: the classic socket backend on every version (a
/// LibTorch without libuv refuses the 2.x default).
template <typename TCPStoreOptions>
void use_socket_tcpstore(TCPStoreOptions& options) {
  if constexpr (detail::HasUseLibUV<TCPStoreOptions>::value) options.useLibUV = false;
}

}  // namespace fastnn::compat
