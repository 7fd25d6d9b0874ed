// Inception-v4 as defined by TF-slim (research/slim/nets/inception_v4.py),
// after Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of
// Residual Connections on Learning" (arXiv:1602.07261). Default image 299.
//
// Scope layout (InceptionV4/...): stem Conv2d_1a_3x3 (VALID, /2),
// Conv2d_2a_3x3 (VALID), Conv2d_2b_3x3; Mixed_3a, Mixed_4a, Mixed_5a;
// Inception-A Mixed_5b..5e; Reduction-A Mixed_6a; Inception-B Mixed_6b..6h;
// Reduction-B Mixed_7a; Inception-C Mixed_7b..7d. Each Mixed_* holds
// Branch_<i>/<layer>. AuxLogits (on Mixed_6h): AvgPool_1a_5x5 (/3, VALID),
// Conv2d_1b_1x1, Conv2d_2a (kernel = the pooled map), Aux_logits (fc).
// Logits: global average pool, Dropout_1b, Logits (fc).
//
// arg_scope (inception_utils.inception_arg_scope): conv2d + batch_norm
// (decay 0.9997, eps 1e-3, no gamma) + ReLU, variance-scaling conv weights;
// fully_connected keeps slim's Xavier weights and zero biases; L2 on conv
// and fc weights.
//
// The block vocabulary below (branches of convs and pools, concatenated
// Mixed blocks, the auxiliary and final heads) comes from the same paper
// and is shared with Inception-ResNet-v2.
#pragma once

#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// Kernel height and width of a conv or pool.
struct Kernel {
  int64_t h = 1, w = 1;
};

/// One layer of an Inception branch: a slim.conv2d (with the arg_scope's
/// batch norm and ReLU) or a max/avg pool.
struct BranchLayer {
  enum Kind { kConv, kMaxPool, kAvgPool };
  Kind kind = kConv;
  /// TF-slim scope, e.g. "Conv2d_0b_1x7"; the variables live under it.
  std::string scope;
  /// Output channels of a conv; unused for pools.
  int64_t depth = 0;
  Kernel kernel;
  int64_t stride = 1;
  Padding padding = Padding::kSame;
};

/// Shorthands for the rows of a block table.
BranchLayer conv_layer(std::string scope, int64_t depth, Kernel kernel, int64_t stride = 1,
                       Padding padding = Padding::kSame);
BranchLayer max_pool_layer(std::string scope, int64_t kernel, int64_t stride, Padding padding);
BranchLayer avg_pool_layer(std::string scope, int64_t kernel, int64_t stride, Padding padding);

/// Layers applied in sequence; their convs are registered in `parent`
/// under their scope names.
class LayerChain {
 public:
  LayerChain() = default;
  LayerChain(torch::nn::Module& parent, int64_t in_channels, std::vector<BranchLayer> layers,
             const Init& init);
  torch::Tensor forward(torch::Tensor x);
  int64_t out_channels() const { return out_channels_; }
  /// Output side for a square input of side `size` (< 1: too small).
  int64_t out_size(int64_t size) const;

 private:
  std::vector<BranchLayer> layers_;
  std::vector<SlimConv> convs_;  // Empty holders for pools.
  int64_t out_channels_ = 0;
};

/// One Branch_<i>: `layers` in sequence, then, if `fork` is not empty,
/// each fork layer applied to that result and the outputs concatenated
/// (the split 1x3 / 3x1 ends of Inception-C).
struct BranchSpec {
  BranchSpec(std::vector<BranchLayer> layers, std::vector<BranchLayer> fork = {})
      : layers(std::move(layers)), fork(std::move(fork)) {}
  std::vector<BranchLayer> layers;
  std::vector<BranchLayer> fork;
};

class InceptionBranchImpl : public torch::nn::Module {
 public:
  InceptionBranchImpl(int64_t in_channels, const BranchSpec& spec, const Init& init);
  torch::Tensor forward(torch::Tensor x);
  int64_t out_channels() const;
  int64_t out_size(int64_t size) const { return chain_.out_size(size); }

 private:
  LayerChain chain_;
  std::vector<LayerChain> fork_;
};
TORCH_MODULE(InceptionBranch);

/// A Mixed_* block: Branch_0, Branch_1, ... concatenated along channels.
class MixedImpl : public torch::nn::Module {
 public:
  MixedImpl(int64_t in_channels, const std::vector<BranchSpec>& branches, const Init& init);
  torch::Tensor forward(torch::Tensor x);
  int64_t out_channels() const { return out_channels_; }
  int64_t out_size(int64_t size) const { return branches_.front()->out_size(size); }

 private:
  std::vector<InceptionBranch> branches_;
  int64_t out_channels_ = 0;
};
TORCH_MODULE(Mixed);

/// The auxiliary head on a 17x17 map: 5x5/3 VALID average pool,
/// Conv2d_1b_1x1 (128), a VALID conv whose kernel covers the pooled map
/// (768, named `conv_scope`), flatten, fc `fc_scope`.
struct AuxHeadOptions {
  int64_t in_channels = 0;
  /// Side of the input feature map; REQUIRES: >= 5.
  int64_t feature_size = 17;
  int64_t num_classes = 1000;
  std::string conv_scope;
  std::string fc_scope;
  /// Initializer of the convs (the arg_scope's).
  Init init;
};

class AuxHeadImpl : public torch::nn::Module {
 public:
  explicit AuxHeadImpl(const AuxHeadOptions& options);
  torch::Tensor forward(torch::Tensor x);

 private:
  SlimConv conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(AuxHead);

/// The Logits scope: global average pool, dropout, flatten, fc "Logits".
class LogitsHeadImpl : public torch::nn::Module {
 public:
  LogitsHeadImpl(int64_t in_channels, int64_t num_classes, double dropout_keep_prob);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Linear fc_{nullptr};
  double dropout_keep_prob_;
};
TORCH_MODULE(LogitsHead);

/// fully_connected's initialization: Xavier-uniform weights, zero biases.
torch::nn::Linear slim_fully_connected(int64_t in, int64_t out);

/// Inception-v4 with its auxiliary head. REQUIRES: image side >= 107 (the
/// smallest input for which the AuxLogits pool still sees a 5x5 window).
class InceptionV4Impl : public ClassifierImpl {
 public:
  explicit InceptionV4Impl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;

 private:
  LayerChain stem_;
  std::vector<Mixed> mixed_;  // Mixed_3a .. Mixed_7d
  size_t aux_tap_ = 0;        // Index of Mixed_6h.
  AuxHead aux_{nullptr};
  LogitsHead logits_{nullptr};
  int64_t image_size_ = 299;
};

}  // namespace fastnn::models
