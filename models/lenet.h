// LeNet as defined by TF-slim (research/slim/nets/lenet.py), after
// LeCun et al., "Gradient-based learning applied to document recognition"
// (1998): conv 5x5/32 -> max-pool 2x2 -> conv 5x5/64 -> max-pool 2x2 ->
// fc 1024 -> dropout -> logits. Default image size 28.
//
// Variables (arg_scope: truncated_normal(0.1) weights, zero biases, L2 on
// conv and fc weights): LeNet/conv1/{weights,biases}, LeNet/conv2/...,
// LeNet/fc3/..., LeNet/fc4/... . Flattening is in TF-slim's order (NHWC).
// Both conv/ReLU/pool blocks and fc3/ReLU/dropout run through the shared
// layer helpers (models/layers.h), so the CPU kernels serve them.
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "models/classifier.h"

namespace fastnn::models {

class LeNetImpl : public ClassifierImpl {
 public:
  explicit LeNetImpl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc3_{nullptr}, fc4_{nullptr};
  double keep_prob_ = 0.5;
  bool fused_ = true;
  int64_t image_size_ = 28;
};

}  // namespace fastnn::models
