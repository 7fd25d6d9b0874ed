// The layout TF-slim's alexnet_v2 and overfeat share (research/slim/nets/
// alexnet.py, overfeat.py): conv1 -> pool1 -> conv2 -> pool2 -> conv3 ->
// conv4 -> conv5 -> pool5 (max pools, VALID, stride 2) -> fc6 -> dropout6
// -> fc7 -> dropout7 -> fc8, the fully connected layers as convolutions.
// Variables: <scope>/{conv1..conv5,fc6,fc7,fc8}/{weights,biases}; conv1-5
// xavier weights, fc6-fc8 truncated_normal(0.005) weights; L2 on all
// weights. Each network's header gives its sizes and biases.
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
  ConvFcLayout layout_;
  /// conv1..conv5, fc6, fc7, fc8.
  std::vector<SlimConv> layers_;
  double dropout_keep_prob_;
};

}  // namespace fastnn::models
