// The kernels' two paths for conv -> ReLU -> 2x2 max-pool, chosen by
// conv_relu_max_pool (src/kernels/conv_relu_pool.cc). Internal to
// src/kernels/.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fastnn::kernels {

/// LibTorch's convolution, then the fused ReLU/pool, with the sparse
/// backward pass (src/kernels/sparse_conv_backward.cc). Output
/// channels-last.
at::Tensor conv_relu_max_pool_sparse(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, int64_t pad_h, int64_t pad_w);

/// For x (N, 1, H, W) whose gradient is not needed: a direct convolution
/// fused with the ReLU/pool, and the weight gradient taken only at the
/// pixels the pool kept. Output contiguous NCHW.
at::Tensor conv_relu_max_pool_direct(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, int64_t pad_h, int64_t pad_w);

}  // namespace fastnn::kernels
