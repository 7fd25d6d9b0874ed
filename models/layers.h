// TF-slim's layer vocabulary on LibTorch: conv2d with its normalizer and
// activation, batch_norm with TF's parameters, and TF's SAME/VALID padding
// for convolutions and pools. Parameter names follow TF-slim
// (<scope>/weights, <scope>/biases, <scope>/BatchNorm/{beta,gamma,
// moving_mean,moving_variance}) once mapped by tf_variable_name().
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fastnn::models {

/// How a weight tensor is initialized.
struct Init {
  enum Kind { kVarianceScaling, kTruncatedNormal, kXavier, kZeros };
  Kind kind = kVarianceScaling;
  /// kTruncatedNormal: the stddev. kVarianceScaling: the factor (TF1's
  /// variance_scaling_initializer(factor=2.0, FAN_IN, truncated normal)).
  double value = 2.0;
};

/// slim.batch_norm. Default: TF-slim's inception arg_scope.
struct BatchNormOptions {
  double decay = 0.9997;
  double epsilon = 1e-3;
  /// gamma exists only with scale=true (slim's default is false).
  bool scale = false;
  bool center = true;
};

/// slim.batch_norm over NCHW (or NC) input; training mode updates the
/// moving statistics with momentum 1 - decay.
class TfBatchNormImpl : public torch::nn::Module {
 public:
  TfBatchNormImpl(int64_t channels, const BatchNormOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  BatchNormOptions options_;
  torch::Tensor beta_, gamma_, moving_mean_, moving_variance_;
};
TORCH_MODULE(TfBatchNorm);

enum class Padding { kSame, kValid };
enum class Activation { kRelu, kRelu6, kNone };

/// slim.conv2d. With batch_norm the conv has no bias (slim's rule).
struct ConvOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 3, kernel_w = 3;
  int64_t stride = 1;
  int64_t dilation = 1;
  /// in_channels for a depthwise convolution (slim.separable_conv2d with
  /// num_outputs=None); its weight is named depthwise_weights.
  bool depthwise = false;
  Padding padding = Padding::kSame;
  /// With Padding::kValid: this many zeros on every side of the input first
  /// (resnet_utils.conv2d_same's explicit padding, symmetric for odd
  /// kernels), as the convolution's own padding: no padded copy.
  int64_t symmetric_pad = 0;
  Activation activation = Activation::kRelu;
  bool batch_norm = true;
  BatchNormOptions bn;
  Init init;
  /// Bias initial value when there is no batch norm.
  double bias_init = 0.0;
};

/// One slim.conv2d: weights (+ biases | + BatchNorm) + activation.
class SlimConvImpl : public torch::nn::Module {
 public:
  explicit SlimConvImpl(const ConvOptions& options);
  torch::Tensor forward(torch::Tensor x);
  /// max_pool(forward(x), kernel, stride, VALID): by the fused kernels
  /// (conv_relu_max_pool_2x2) where `fused`, the pool is 2x2/2 and this
  /// conv is one they compute (stride 1, no dilation, no normalizer, ReLU,
  /// symmetric padding).
  torch::Tensor forward_max_pool(torch::Tensor x, int64_t kernel, int64_t stride, bool fused);

 private:
  /// The convolution's own padding {h, w} for input x: VALID's
  /// symmetric_pad, or SAME's when it is the same on both sides; nullopt
  /// when SAME pads one side more (an explicit pad first).
  std::optional<std::vector<int64_t>> symmetric_padding(const torch::Tensor& x) const;

  ConvOptions options_;
  torch::Tensor weight_, bias_;
  TfBatchNorm bn_{nullptr};
};
TORCH_MODULE(SlimConv);

/// Shorthand: a k x k slim.conv2d.
ConvOptions conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1,
                 Padding padding = Padding::kSame);

/// slim.conv2d without a normalizer: weights from `init`, biases filled
/// with `bias`, ReLU (alexnet, overfeat and vgg style).
ConvOptions biased_conv(int64_t in, int64_t out, int64_t k, Init init, double bias,
                        int64_t stride = 1, Padding padding = Padding::kSame);

/// TF's padding amounts (before, after) for one spatial dimension.
std::pair<int64_t, int64_t> same_padding(int64_t size, int64_t kernel, int64_t stride,
                                         int64_t dilation = 1);

/// slim.max_pool2d / slim.avg_pool2d with TF's SAME (padding never counts
/// towards the maximum or the average) or VALID.
torch::Tensor max_pool(const torch::Tensor& x, int64_t kernel, int64_t stride, Padding padding);
torch::Tensor avg_pool(const torch::Tensor& x, int64_t kernel, int64_t stride, Padding padding);

/// max_pool2d(relu(conv2d(x, weight, bias, stride 1, {pad_h, pad_w})), 2, 2)
/// (VALID): by the project's CPU kernels (src/kernels/kernels.h), the
/// output in memory format `format`, when `fused` and they serve these
/// tensors; else by LibTorch's operators, in the layout they give (what an
/// export traces).
torch::Tensor conv_relu_max_pool_2x2(const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& bias, int64_t pad_h, int64_t pad_w,
                                     bool fused,
                                     c10::MemoryFormat format = c10::MemoryFormat::Contiguous);

/// dropout(relu(linear(x, weight, bias)), 1 - keep_prob), dropout only while
/// `training`: by the project's CPU kernels when `fused`, training with
/// gradients on, and they serve x; else by LibTorch's operators.
torch::Tensor linear_relu_dropout(const torch::Tensor& x, const torch::Tensor& weight,
                                  const torch::Tensor& bias, double keep_prob, bool training,
                                  bool fused);

/// Fills `w` (conv weight [out, in, kh, kw] or linear [out, in]).
void init_weight(torch::Tensor w, const Init& init);

}  // namespace fastnn::models
