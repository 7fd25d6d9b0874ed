// Inception v3 as defined by TF-slim (research/slim/nets/inception_v3.py),
// after Szegedy et al., "Rethinking the Inception Architecture for Computer
// Vision" (2015), arxiv.org/abs/1512.00567. Default image size 299.
//
// Scopes: InceptionV3/Conv2d_1a_3x3 .. Conv2d_4a_3x3 (VALID stem),
// Mixed_5b..Mixed_7c with Branch_0..Branch_3 (TF-slim's irregular names kept,
// e.g. Mixed_5c/Branch_1/Conv_1_0c_5x5, Mixed_6a/Branch_0/Conv2d_1a_1x1 for a
// 3x3 conv), the auxiliary head on Mixed_6e
// (InceptionV3/AuxLogits/{Conv2d_1b_1x1, Conv2d_2a_5x5, Conv2d_2b_1x1}) and
// InceptionV3/Logits/Conv2d_1c_1x1. forward() returns both heads' logits.
#pragma once

#include "models/classifier.h"
#include "models/inception_utils.h"

namespace fastnn::models {

class InceptionV3Impl : public ClassifierImpl {
 public:
  /// REQUIRES: image_size (0 = 299) >= 107 and equal to the size fed to
  /// forward(): the auxiliary head's second conv takes its kernel (and
  /// scope name, Conv2d_2a_<k>x<k>) from the Mixed_6e map size, k <= 5.
  explicit InceptionV3Impl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  InceptionTrunk trunk_;
  SlimConv aux_conv1_{nullptr}, aux_conv2_{nullptr}, aux_logits_{nullptr};
  ConvLogitsHead logits_{nullptr};
};

}  // namespace fastnn::models
