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
#pragma once

#include "models/conv_fc_net.h"

namespace fastnn::models {

/// TF-slim's overfeat. Inputs must give a 6x6 pool5 map (231x231 does).
class OverFeatImpl : public ConvFcNetImpl {
 public:
  explicit OverFeatImpl(const ModelOptions& options);
};

}  // namespace fastnn::models
