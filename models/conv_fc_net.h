// The layout TF-slim's alexnet_v2 and overfeat share (research/slim/nets/
// alexnet.py, overfeat.py): conv1 -> pool1 -> conv2 -> pool2 -> conv3 ->
// conv4 -> conv5 -> pool5 (max pools, VALID, stride 2) -> fc6 -> dropout6
// -> fc7 -> dropout7 -> fc8, the fully connected layers as convolutions.
// Variables: <scope>/{conv1..conv5,fc6,fc7,fc8}/{weights,biases}; conv1-5
// xavier weights, fc6-fc8 truncated_normal(0.005) weights; L2 on all
// weights. The two networks' sizes and biases are below.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// One convolution of a ConvFcNet; its input channels are the previous
/// layer's outputs (conv1's: the image's).
struct ConvFcLayer {
  int64_t out_channels;
  int64_t kernel;
  int64_t stride;
  Padding padding;
  double bias;
};

/// What tells the networks of this layout apart.
struct ConvFcLayout {
  const char* scope;
  /// conv1..conv5, fc6, fc7; fc8 has num_classes outputs and no activation.
  std::array<ConvFcLayer, 7> layers;
  double fc8_bias;
  /// pool1, pool2 and pool5 are pool_kernel x pool_kernel max pools.
  int64_t pool_kernel;
  /// The input size that leaves fc8 a 1x1 map (named by the error).
  int64_t image_size;
};

class ConvFcNetImpl : public ClassifierImpl {
 public:
  ConvFcNetImpl(const ConvFcLayout& layout, const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  int64_t pool_kernel_;
  int64_t image_size_;  // named by the size error
  /// conv1..conv5, fc6, fc7, fc8.
  std::vector<SlimConv> layers_;
  double dropout_keep_prob_;
  /// The CPU kernels where a block has their pattern (ModelOptions).
  bool fused_ = true;
};

// AlexNet v2 as defined by TF-slim (research/slim/nets/alexnet.py): the
// one-GPU network of Krizhevsky, "One weird trick for parallelizing
// convolutional neural networks" (2014), without LRN, with the fully
// connected layers as convolutions. Default image size 224.
//
// conv1 11x11/4 VALID 64 -> pool1 3x3/2 -> conv2 5x5 192 -> pool2 ->
// conv3 3x3 384 -> conv4 384 -> conv5 256 -> pool5 (pools VALID) ->
// fc6 5x5 VALID 4096 -> dropout6 -> fc7 1x1 4096 -> dropout7 -> fc8 1x1.
// Variables: alexnet_v2/{conv1..conv5,fc6,fc7,fc8}/{weights,biases}.
// alexnet_v2_arg_scope: conv1-5 xavier weights and biases 0.1; fc6-fc8
// truncated_normal(0.005) weights, biases 0.1 (fc8: zero); L2 on all
// weights.

/// TF-slim's alexnet_v2. Inputs must give a 5x5 pool5 map (224x224 does).
class AlexNetV2Impl : public ConvFcNetImpl {
 public:
  explicit AlexNetV2Impl(const ModelOptions& options);
};

// OverFeat as defined by TF-slim (research/slim/nets/overfeat.py), after
// Sermanet et al., "OverFeat: Integrated Recognition, Localization and
// Detection using Convolutional Networks" (2014), fast model, with the
// fully connected layers as convolutions. Default image size 231.
//
// conv1 11x11/4 VALID 64 -> pool1 2x2/2 -> conv2 5x5 VALID 256 -> pool2 ->
// conv3 3x3 512 -> conv4 1024 -> conv5 1024 -> pool5 (pools VALID) ->
// fc6 6x6 VALID 3072 -> dropout6 -> fc7 1x1 4096 -> dropout7 -> fc8 1x1.
// Variables: overfeat/{conv1..conv5,fc6,fc7,fc8}/{weights,biases}.
// overfeat_arg_scope: conv1-5 xavier weights and zero biases; fc6-fc8
// truncated_normal(0.005) weights, biases 0.1 (fc8: zero); L2 on all
// weights.

/// TF-slim's overfeat. Inputs must give a 6x6 pool5 map (231x231 does).
class OverFeatImpl : public ConvFcNetImpl {
 public:
  explicit OverFeatImpl(const ModelOptions& options);
};

}  // namespace fastnn::models
