// Inception-ResNet-v2 as defined by TF-slim
// (research/slim/nets/inception_resnet_v2.py, output_stride 16, VALID
// reductions), after Szegedy et al., "Inception-v4, Inception-ResNet and the
// Impact of Residual Connections on Learning" (arXiv:1602.07261). Default
// image 299.
//
// Scope layout (InceptionResnetV2/...): stem Conv2d_1a_3x3 (VALID, /2),
// Conv2d_2a_3x3 (VALID), Conv2d_2b_3x3, MaxPool_3a_3x3 (/2), Conv2d_3b_1x1,
// Conv2d_4a_3x3 (VALID), MaxPool_5a_3x3 (/2); Mixed_5b (320 channels);
// Repeat/block35_1..10 (scale 0.17); Mixed_6a (1088);
// Repeat_1/block17_1..20 (scale 0.10); Mixed_7a (2080);
// Repeat_2/block8_1..9 (scale 0.20); Block8 (scale 1.0, no activation);
// Conv2d_7b_1x1 (1536). A residual block holds Branch_<i>/<layer> and
// Conv2d_1x1 (biases, no batch norm, no activation) back to its input
// depth; out = relu(in + scale * Conv2d_1x1(concat(branches))).
// AuxLogits (on the last block17): 5x5/3 VALID pool, Conv2d_1b_1x1,
// Conv2d_2a_5x5 (kernel = the pooled map), Logits (fc). Logits:
// AvgPool_1a_8x8 (global), Dropout, Logits (fc).
//
// arg_scope (inception_resnet_v2_arg_scope): conv2d + batch_norm (decay
// 0.9997, eps 1e-3, no gamma) + ReLU. It sets no initializer, so conv and fc
// weights are slim's Xavier-uniform and biases zero; L2 covers the weights
// and the biases of every conv and fc.
#pragma once

#include <vector>

#include "models/classifier.h"
#include "models/inception_v4.h"

namespace fastnn::models {

/// One Inception-ResNet block (TF-slim's block35 / block17 / block8).
struct ResidualBlockOptions {
  std::vector<BranchSpec> branches;
  /// Multiplier of the residual before the sum.
  double scale = 1.0;
  /// ReLU after the sum (false only on the final Block8).
  bool relu = true;
};

class InceptionResnetBlockImpl : public MixedImpl {
 public:
  InceptionResnetBlockImpl(int64_t channels, const ResidualBlockOptions& o, const Init& init);
  torch::Tensor forward(torch::Tensor x);

 private:
  SlimConv up_{nullptr};
  double scale_;
  bool relu_;
};
TORCH_MODULE(InceptionResnetBlock);

/// Inception-ResNet-v2 with its auxiliary head. REQUIRES: image side >= 107
/// (the smallest input for which the AuxLogits pool still sees a 5x5 map).
class InceptionResnetV2Impl : public ClassifierImpl {
 public:
  explicit InceptionResnetV2Impl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;
  /// Weights and biases of every conv and fc (the arg_scope also sets
  /// biases_regularizer).
  std::vector<torch::Tensor> regularized_weights() override;

 private:
  LayerChain stem_, conv_7b_;
  Mixed mixed_5b_{nullptr}, mixed_6a_{nullptr}, mixed_7a_{nullptr};
  std::vector<InceptionResnetBlock> block35_, block17_, block8_;
  InceptionResnetBlock final_block8_{nullptr};
  AuxHead aux_{nullptr};
  LogitsHead logits_{nullptr};
  int64_t image_size_ = 299;
};

}  // namespace fastnn::models
