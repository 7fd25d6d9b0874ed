// Inception v1 (GoogLeNet) as defined by TF-slim
// (research/slim/nets/inception_v1.py), after Szegedy et al., "Going deeper
// with convolutions" (2014), arxiv.org/abs/1409.4842. Default image size 224.
//
// Scopes: InceptionV1/{Conv2d_1a_7x7, Conv2d_2b_1x1, Conv2d_2c_3x3},
// Mixed_3b..Mixed_5c each with Branch_0..Branch_3 (e.g.
// InceptionV1/Mixed_4b/Branch_1/Conv2d_0b_3x3), and
// InceptionV1/Logits/Conv2d_0c_1x1 (weights + biases). The body's convs
// use trunc_normal(0.01); the logits use the arg_scope's variance scaling.
// No auxiliary heads (TF-slim omits them).
#pragma once

#include "models/classifier.h"
#include "models/inception_utils.h"

namespace fastnn::models {

class InceptionV1Impl : public ClassifierImpl {
 public:
  /// Images of any size >= 32; the final 7x7 average pool shrinks to the
  /// feature map below 224 (TF-slim would reject such inputs).
  explicit InceptionV1Impl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  InceptionTrunk trunk_;
  ConvLogitsHead logits_{nullptr};
};

}  // namespace fastnn::models
