// The Oxford VGG networks as defined by TF-slim (research/slim/nets/vgg.py),
// after Simonyan & Zisserman, "Very Deep Convolutional Networks for
// Large-Scale Image Recognition" (2015): configurations A (vgg_a, 11
// layers), D (vgg_16) and E (vgg_19), with the fully connected layers as
// convolutions. Default image size 224.
//
// Five stages of 3x3 SAME convs (64, 128, 256, 512, 512 channels; A: 1,1,2,
// 2,2 convs, D: 2,2,3,3,3, E: 2,2,4,4,4), each followed by a 2x2/2 VALID
// max-pool; then fc6 7x7 VALID 4096 -> dropout6 -> fc7 1x1 4096 ->
// dropout7 -> fc8 1x1. Variables (slim.repeat scopes): vgg_16/conv1/
// conv1_1/{weights,biases}, ..., vgg_16/conv5/conv5_3/..., vgg_16/fc6/...,
// vgg_16/fc7/..., vgg_16/fc8/... . vgg_arg_scope: xavier weights, zero
// biases, L2 on all weights.
#pragma once

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// TF-slim's vgg_a (depth 11), vgg_16 or vgg_19. Inputs must give a 7x7
/// pool5 map (224x224 does).
class VggImpl : public ClassifierImpl {
 public:
  /// REQUIRES: depth is 11, 16 or 19.
  VggImpl(const ModelOptions& options, int depth);
  ModelOutput forward(torch::Tensor images) override;

 private:
  std::vector<std::vector<SlimConv>> stages_;
  SlimConv fc6_{nullptr}, fc7_{nullptr}, fc8_{nullptr};
  double dropout_keep_prob_;
  /// The CPU kernels where a block has their pattern (ModelOptions).
  bool fused_ = true;
};

/// model_factory's row for a depth: make_vgg<11> is vgg_a.
template <int kDepth>
std::shared_ptr<ClassifierImpl> make_vgg(const ModelOptions& options) {
  return std::make_shared<VggImpl>(options, kDepth);
}

}  // namespace fastnn::models
