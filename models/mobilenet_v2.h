// MobileNet v2 as defined by TF-slim (research/slim/nets/mobilenet/
// mobilenet_v2.py, mobilenet.py, conv_blocks.py), after Sandler et al.,
// "MobileNetV2: Inverted Residuals and Linear Bottlenecks" (2018),
// arxiv.org/abs/1801.04381. Default image size 224.
//
// Scopes: MobilenetV2/Conv (3x3/2), MobilenetV2/expanded_conv and
// expanded_conv_1..expanded_conv_16 (each: expand 1x1 when the expansion is
// wider than the input, depthwise 3x3, project 1x1 without activation,
// residual add when stride 1 and depths match), MobilenetV2/Conv_1 (1x1),
// MobilenetV2/Logits/Conv2d_1c_1x1 (weights + biases, after a global average
// pool). training_scope: trunc_normal(0.09) weights, ReLU6, BatchNorm with
// gamma (decay 0.997, epsilon 1e-3), L2 on conv weights but not depthwise.
// Depths are scaled by the multiplier and rounded to multiples of 8
// (_make_divisible); mobilenet_v2_035 uses finegrain_classification_mode,
// which keeps Conv_1 at 1280.
#pragma once

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/inception_utils.h"
#include "models/layers.h"

namespace fastnn::models {

/// TF-slim's _make_divisible: `value` rounded to the nearest multiple of
/// `divisor` (at least `min_value`), never more than 10% below `value`.
int64_t make_divisible(double value, int64_t divisor, int64_t min_value = 0);

/// One inverted-residual block (conv_blocks.expanded_conv).
class ExpandedConvImpl : public torch::nn::Module {
 public:
  ExpandedConvImpl(int64_t in, int64_t expansion, int64_t out, int64_t stride);
  torch::Tensor forward(torch::Tensor x);

 private:
  SlimConv expand_{nullptr}, depthwise_{nullptr}, project_{nullptr};
  bool residual_ = false;
};
TORCH_MODULE(ExpandedConv);

class MobileNetV2Impl : public ClassifierImpl {
 public:
  /// `depth_multiplier`: 1.0, 1.4 or 0.35 for the registered names;
  /// `finegrain`: keep the last conv at 1280 when the multiplier is < 1.
  MobileNetV2Impl(const ModelOptions& options, double depth_multiplier, bool finegrain = false);
  ModelOutput forward(torch::Tensor images) override;

 private:
  SlimConv conv_{nullptr}, conv_1_{nullptr};
  std::vector<ExpandedConv> blocks_;
  ConvLogitsHead logits_{nullptr};
};

/// A MobileNetV2Impl for the model table.
std::shared_ptr<ClassifierImpl> mobilenet_v2(const ModelOptions& options, double depth_multiplier,
                                             bool finegrain = false);

}  // namespace fastnn::models
