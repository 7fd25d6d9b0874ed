// Table-driven pieces shared by the Inception networks (TF-slim's
// research/slim/nets/inception_v{1,2,3}.py and inception_utils.py).
//
// A network body is a list of stages. A stage with a name is a "Mixed"
// module: parallel branches ("Branch_0", "Branch_1", ...) whose outputs are
// concatenated on channels. A stage without a name holds layers that sit
// directly in the network scope (the stem: Conv2d_1a_7x7, MaxPool_2a_3x3,
// ...). Every conv is a slim.conv2d under inception_arg_scope: no bias,
// BatchNorm (decay 0.9997, epsilon 1e-3, no gamma), ReLU, and
// variance_scaling_initializer() weights unless the layer names a
// truncated-normal stddev.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>

#include <functional>
#include <string>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// One layer of a branch or of the stem.
struct LayerDef {
  enum Kind { kConv, kMaxPool, kAvgPool };
  Kind kind = kConv;
  /// Variable scope of a conv, e.g. "Conv2d_0a_1x1" (pools have none).
  std::string name;
  int64_t depth = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride = 1;
  Padding padding = Padding::kSame;
  /// > 0: trunc_normal(stddev) weights instead of the scope's initializer.
  double stddev = 0.0;
  /// Convs flagged `fork` at the end of a branch all read the same input
  /// and their outputs are concatenated (Inception v3's Mixed_7b/7c).
  bool fork = false;
};

/// A conv with a kernel_h x kernel_w window.
LayerDef conv_def(std::string name, int64_t depth, int64_t kernel_h, int64_t kernel_w,
                  int64_t stride = 1, Padding padding = Padding::kSame, double stddev = 0.0);
/// A k x k max or average pool.
LayerDef max_pool_def(int64_t kernel, int64_t stride = 1, Padding padding = Padding::kSame);
LayerDef avg_pool_def(int64_t kernel, int64_t stride = 1, Padding padding = Padding::kSame);

/// A named Mixed module, or (empty name) layers in the network scope.
struct StageDef {
  std::string name;
  std::vector<std::vector<LayerDef>> branches;
};

/// slim.conv2d options under inception_arg_scope (BN, ReLU, variance
/// scaling); `stddev` > 0 switches to trunc_normal(stddev).
ConvOptions inception_conv(int64_t in, const LayerDef& def, double stddev);

/// The stages of an Inception body, registered on `net` (Mixed modules as
/// submodules named after the stage, stem layers directly on `net`).
class InceptionTrunk {
 public:
  /// `stddev` > 0 overrides the initializer of every conv without its own
  /// (Inception v1 wraps its whole body in trunc_normal(0.01)).
  InceptionTrunk(torch::nn::Module& net, int64_t in_channels, const std::vector<StageDef>& stages,
                 double stddev = 0.0);

  /// Runs every stage; when `tap` names a stage, its output goes to
  /// `*tapped` (the input of an auxiliary head).
  torch::Tensor forward(torch::Tensor x, const std::string& tap = "",
                        torch::Tensor* tapped = nullptr) const;

  int64_t out_channels() const { return out_channels_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::function<torch::Tensor(torch::Tensor)>> stages_;
  int64_t out_channels_ = 0;
};

/// TF-slim's _reduced_kernel_size_for_small_input for square maps.
inline int64_t reduced_kernel(int64_t size, int64_t kernel) {
  return size < kernel ? size : kernel;
}

/// A 1x1 slim.conv2d with biases, no BatchNorm and no activation: the
/// logits layer of TF-slim's classifiers (the MobileNets use it too).
ConvOptions logits_conv(int64_t in, int64_t classes, const Init& init);

/// Drops the 1x1 spatial dimensions of [N, C, 1, 1] logits (TF-slim's
/// SpatialSqueeze); throws if the map is not 1x1.
torch::Tensor spatial_squeeze(const torch::Tensor& logits, const std::string& scope);

/// TF-slim's Logits scope on the pooled [N, C, 1, 1] features of the
/// Inception v1-v3 and MobileNet classifiers: dropout, a 1x1 logits_conv,
/// SpatialSqueeze. Variables: Logits/<conv_scope>/{weights, biases}.
struct ConvLogitsOptions {
  int64_t in_channels = 0;
  int64_t num_classes = 1000;
  /// 1.0 disables dropout.
  double dropout_keep_prob = 0.5;
  /// The 1x1 conv's weights. Default: variance scaling.
  Init init;
  /// Scope names inside Logits (Inception v1: Dropout_0b, Conv2d_0c_1x1;
  /// MobileNet v2: Dropout).
  std::string dropout_scope = "Dropout_1b";
  std::string conv_scope = "Conv2d_1c_1x1";
};

/// ConvLogitsOptions over `in_channels` features with `model`'s num_classes
/// and dropout_keep_prob.
ConvLogitsOptions conv_logits(const ModelOptions& model, int64_t in_channels,
                              const Init& init = Init{});

/// Registered by a network as "Logits".
class ConvLogitsHeadImpl : public torch::nn::Module {
 public:
  /// `network_scope` names the network in the error spatial_squeeze raises.
  ConvLogitsHeadImpl(const ConvLogitsOptions& options, std::string network_scope);
  /// [N, in_channels, 1, 1] -> [N, num_classes].
  torch::Tensor forward(const torch::Tensor& x);

 private:
  std::string network_scope_;
  torch::nn::Dropout dropout_{nullptr};
  SlimConv conv_{nullptr};
};
TORCH_MODULE(ConvLogitsHead);

}  // namespace fastnn::models
