// LeNet's pooling blocks as fused CPU kernels (issue 30 item 4).
//
// TF-slim's LeNet runs conv -> ReLU -> 2x2 max-pool twice. On a CPU the
// first block is the slowest part of the step for what it computes: a
// 1-channel 5x5 convolution is a GEMM of depth 25 that oneDNN runs at a
// tenth of its usual rate, and LibTorch's NCHW max-pool spends more time
// than the convolution. These kernels compute the same values:
//   - max-pool and ReLU commute (both monotonic), so ReLU runs on the
//     pooled quarter of the values;
//   - a pool's gradient goes to its window's first maximum (LibTorch's
//     rule) and only where the pooled value is positive (ReLU's);
//   - the first block's convolution is direct (all output channels of a
//     pixel at once), and its weight gradient is taken only at the pixels
//     the pool kept: a quarter of the multiply-adds of the full gradient.
// Sums run in another order than oneDNN's, so values agree to float
// rounding, not bit for bit (tests/models/lenet_kernels_test.cc).
#pragma once

#include <ATen/core/Tensor.h>

namespace fastnn::models {

/// Whether the fused kernels can serve `x` (CPU float32, not under CPU
/// autocast, not traced for an export) and are not switched off by
/// FASTNN_FUSED_KERNELS=0 in the environment (read once: for A/B runs).
bool fused_kernels_apply(const at::Tensor& x);

/// max_pool2d(relu(conv2d(x, weight, bias, padding 2)), 2, 2) for x of
/// shape (N, 1, H, W), H and W even, weight (C, 1, 5, 5) with C a multiple
/// of 8, bias (C). Output (N, C, H/2, W/2), contiguous NCHW. Differentiable
/// in weight and bias (x's gradient is not computed: it is the input
/// image).
at::Tensor conv5x5_relu_maxpool(const at::Tensor& x, const at::Tensor& weight,
                                const at::Tensor& bias);

/// max_pool2d(relu(conv2d(x, weight, bias, padding 2)), 2, 2) for x of
/// shape (N, Cin, H, W), Cin a multiple of 16, H and W even, weight
/// (C, Cin, 5, 5) with C a multiple of 8, bias (C): LeNet's second block.
/// The convolution is LibTorch's; the ReLU and pool are fused, and the
/// backward pass visits only the pixels the pool kept
/// (models/lenet_sparse_backward.cc): a quarter or less of the multiply-adds
/// of a convolution's backward pass. The output has channels-last strides,
/// as relu_maxpool_channels_last's. Differentiable in x, weight and bias.
at::Tensor conv5x5_relu_maxpool_channels_last(const at::Tensor& x, const at::Tensor& weight,
                                              const at::Tensor& bias);

/// dropout(relu(linear(x, weight, bias)), 1 - keep_prob) while training,
/// for x (N, K) with K a multiple of 8, weight (M, K), bias (M), keep_prob in
/// (0, 1]: LeNet's fc3 and dropout. The product is LibTorch's addmm and the
/// mask LibTorch's dropout's (bernoulli_(keep_prob), scaled by 1/keep_prob);
/// the backward pass sums only the rows ReLU and dropout pass
/// (models/lenet_sparse_linear.cc). Differentiable in x, weight and bias.
at::Tensor linear_relu_dropout(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double keep_prob);

/// max_pool2d(relu(x), 2, 2) for x of shape (N, C, H, W), C a multiple of 8,
/// H and W even.
/// The output has sizes (N, C, H/2, W/2) and channels-last strides, so
/// that TF-slim's flatten order (permute to NHWC, flatten) is a view, not a
/// copy. Differentiable in x.
at::Tensor relu_maxpool_channels_last(const at::Tensor& x);

}  // namespace fastnn::models
