// The project's own CPU kernels: layer patterns that TF-slim's networks
// share, computed as LibTorch's operators compute them (to float rounding:
// sums run in another order) with backward passes that skip the zeros.
//   - conv -> ReLU -> 2x2/2 max-pool: the pool passes each window's
//     gradient to one of its four pixels, and ReLU only where the pooled
//     value is positive, so at least three quarters of the convolution's
//     output gradient are zeros. The backward pass visits the kept pixels
//     only (src/kernels/sparse_conv_backward.cc). Max-pool and ReLU commute
//     (both monotonic): ReLU runs on the pooled quarter. A one-channel input
//     that needs no gradient (a grayscale image) gets a direct convolution
//     (src/kernels/conv_relu_pool.cc): a GEMM of depth kernel_h * kernel_w
//     runs far below oneDNN's usual rate.
//   - fully connected -> ReLU -> dropout while training: ReLU and dropout
//     zero most of the output gradient (src/kernels/linear_relu_dropout.cc).
// Which layers use them: models/layers.h (conv_relu_max_pool_2x2), the
// networks' forward passes, and the key fused_kernels (false: LibTorch's
// operators only).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>

#include <cstdint>

namespace fastnn::kernels {

/// Whether the kernels can serve `x`: a CPU float32 tensor, not under CPU
/// autocast, not traced for an export.
bool serve(const at::Tensor& x);

/// Whether conv_relu_max_pool serves this block: serve(x), x (N, Cin, H, W),
/// weight (C, Cin, KH, KW) with C a multiple of 8, and a convolution output
/// of at least 2x2 for the given padding.
bool conv_relu_max_pool_serves(const at::Tensor& x, const at::Tensor& weight, int64_t pad_h,
                               int64_t pad_w);

/// max_pool2d(relu(conv2d(x, weight, bias, stride 1, {pad_h, pad_w})), 2, 2)
/// (a VALID pool: an odd last row or column of the convolution's output is
/// dropped), the output in memory format `format`. Differentiable in x,
/// weight and bias. REQUIRES: conv_relu_max_pool_serves(x, weight, pad_h,
/// pad_w).
at::Tensor conv_relu_max_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              int64_t pad_h, int64_t pad_w, c10::MemoryFormat format);

/// Whether linear_relu_dropout serves x (N, K): serve(x) and K a multiple
/// of 8.
bool linear_relu_dropout_serves(const at::Tensor& x);

/// dropout(relu(linear(x, weight, bias)), 1 - keep_prob) while training,
/// for x (N, K), weight (M, K), bias (M), keep_prob in (0, 1]. The product
/// is LibTorch's addmm and the mask LibTorch's dropout's (bernoulli_ of
/// keep_prob on the same generator, scaled by 1 / keep_prob): a run draws
/// the same masks as with LibTorch's layers. Differentiable in x, weight
/// and bias. REQUIRES: linear_relu_dropout_serves(x).
at::Tensor linear_relu_dropout(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double keep_prob);

}  // namespace fastnn::kernels
