// Inception v2 as defined by TF-slim (research/slim/nets/inception_v2.py),
// after Ioffe & Szegedy, "Batch Normalization: Accelerating Deep Network
// Training by Reducing Internal Covariate Shift" (2015),
// arxiv.org/abs/1502.03167. Default image size 224.
//
// Scopes: InceptionV2/Conv2d_1a_7x7 is a slim.separable_conv2d (depthwise
// 7x7 with channel multiplier 8, then pointwise 1x1 to 64): variables
// depthwise_weights, pointwise_weights and biases, ReLU, no BatchNorm and no
// weight decay, because inception_arg_scope only configures slim.conv2d.
// Then Conv2d_2b_1x1, Conv2d_2c_3x3, Mixed_3b..Mixed_5c (Mixed_4a and
// Mixed_5a are the stride-2 reductions) and InceptionV2/Logits/Conv2d_1c_1x1.
#pragma once

#include "models/classifier.h"
#include "models/inception_utils.h"

namespace fastnn::models {

/// slim.separable_conv2d with biases and ReLU (no normalizer), TF SAME
/// padding. Variables: depthwise_weights, pointwise_weights, biases.
class SeparableConvImpl : public torch::nn::Module {
 public:
  SeparableConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t multiplier, int64_t stride,
                    const Init& init);
  torch::Tensor forward(torch::Tensor x);

 private:
  int64_t in_, kernel_, stride_;
  torch::Tensor depthwise_, pointwise_, bias_;
};
TORCH_MODULE(SeparableConv);

class InceptionV2Impl : public ClassifierImpl {
 public:
  /// Images of any size >= 32 (the final average pool shrinks to fit).
  explicit InceptionV2Impl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  SeparableConv conv1_{nullptr};
  InceptionTrunk trunk_;
  ConvLogitsHead logits_{nullptr};
};

}  // namespace fastnn::models
