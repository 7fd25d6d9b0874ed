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
#pragma once

#include "models/conv_fc_net.h"

namespace fastnn::models {

/// TF-slim's alexnet_v2. Inputs must give a 5x5 pool5 map (224x224 does).
class AlexNetV2Impl : public ConvFcNetImpl {
 public:
  explicit AlexNetV2Impl(const ModelOptions& options);
};

}  // namespace fastnn::models
