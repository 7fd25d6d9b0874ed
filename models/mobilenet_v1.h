// MobileNet v1 as defined by TF-slim (research/slim/nets/mobilenet_v1.py),
// after Howard et al., "MobileNets: Efficient Convolutional Neural Networks
// for Mobile Vision Applications" (2017), arxiv.org/abs/1704.04861. Default
// image size 224; variants mobilenet_v1_075/_050/_025 scale every depth by
// the multiplier: max(int(depth * multiplier), 8).
//
// Scopes: MobilenetV1/Conv2d_0 (3x3/2 conv), then for i = 1..13
// MobilenetV1/Conv2d_<i>_depthwise (depthwise_weights) and
// MobilenetV1/Conv2d_<i>_pointwise (1x1), and
// MobilenetV1/Logits/Conv2d_1c_1x1 (weights + biases). mobilenet_v1_arg_scope:
// trunc_normal(0.09) weights, ReLU6, BatchNorm with gamma (decay 0.9997,
// epsilon 1e-3), L2 on conv weights but not on depthwise ones.
#pragma once

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/inception_utils.h"
#include "models/layers.h"

namespace fastnn::models {

class MobileNetV1Impl : public ClassifierImpl {
 public:
  /// `depth_multiplier`: 1.0, 0.75, 0.5 or 0.25 for the registered names.
  MobileNetV1Impl(const ModelOptions& options, double depth_multiplier);
  ModelOutput forward(torch::Tensor images) override;

 private:
  std::vector<SlimConv> layers_;
  ConvLogitsHead logits_{nullptr};
};

/// A MobileNetV1Impl for the model table.
std::shared_ptr<ClassifierImpl> mobilenet_v1(const ModelOptions& options, double depth_multiplier);

}  // namespace fastnn::models
