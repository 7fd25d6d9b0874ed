// LeNet's conv -> ReLU -> 2x2 max-pool block by LibTorch's layers: the
// reference the fused kernels' tests compare with.
#pragma once

#include <torch/torch.h>

namespace fastnn::models {

inline torch::Tensor reference_block(const torch::Tensor& x, const torch::Tensor& w,
                                     const torch::Tensor& b) {
  namespace F = torch::nn::functional;
  return torch::max_pool2d(torch::relu(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding(2))),
                           2, 2);
}

}  // namespace fastnn::models
