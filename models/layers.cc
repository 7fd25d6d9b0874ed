#include "models/layers.h"

#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <vector>

#include "models/classifier.h"
#include "src/kernels/kernels.h"

namespace fastnn::models {

TfBatchNormImpl::TfBatchNormImpl(int64_t channels, const BatchNormOptions& o) : options_(o) {
  if (o.center) beta_ = register_parameter("beta", torch::zeros({channels}));
  if (o.scale) gamma_ = register_parameter("gamma", torch::ones({channels}));
  moving_mean_ = register_buffer("moving_mean", torch::zeros({channels}));
  moving_variance_ = register_buffer("moving_variance", torch::ones({channels}));
}

torch::Tensor TfBatchNormImpl::forward(const torch::Tensor& x) {
  return torch::batch_norm(x, gamma_, beta_, moving_mean_, moving_variance_, is_training(),
                           1.0 - options_.decay, options_.epsilon,
                           /*cudnn_enabled=*/true);
}

void init_weight(torch::Tensor w, const Init& init) {
  torch::NoGradGuard no_grad;
  const int64_t receptive = w.dim() > 2 ? w[0][0].numel() : 1;
  const int64_t fan_in = w.size(1) * receptive;
  const int64_t fan_out = w.size(0) * receptive;
  switch (init.kind) {
    case Init::kZeros:
      w.zero_();
      break;
    case Init::kTruncatedNormal:
      truncated_normal_(w, init.value);
      break;
    case Init::kXavier: {
      const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      w.uniform_(-limit, limit);
      break;
    }
    case Init::kVarianceScaling:
      truncated_normal_(w, std::sqrt(1.3 * init.value / static_cast<double>(fan_in)));
      break;
  }
}

SlimConvImpl::SlimConvImpl(const ConvOptions& o) : options_(o) {
  const int64_t out = o.depthwise ? o.in_channels : o.out_channels;
  const int64_t in_per_group = o.depthwise ? 1 : o.in_channels;
  auto w = torch::empty({out, in_per_group, o.kernel_h, o.kernel_w});
  if (o.depthwise) {
    // Fan-in of a depthwise filter is its spatial size, as in TF.
    init_weight(w, o.init);
    weight_ = register_parameter("depthwise_weights", w);
  } else {
    init_weight(w, o.init);
    weight_ = register_parameter("weight", w);
  }
  if (o.batch_norm) {
    bn_ = register_module("BatchNorm", TfBatchNorm(out, o.bn));
  } else {
    bias_ = register_parameter("bias", torch::full({out}, o.bias_init));
  }
}

std::pair<int64_t, int64_t> same_padding(int64_t size, int64_t kernel, int64_t stride,
                                         int64_t dilation) {
  const int64_t effective = (kernel - 1) * dilation + 1;
  const int64_t out = (size + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + effective - size, 0);
  return {total / 2, total - total / 2};
}

std::optional<std::vector<int64_t>> SlimConvImpl::symmetric_padding(const torch::Tensor& x) const {
  const auto& o = options_;
  if (o.padding != Padding::kSame) return std::vector<int64_t>{o.symmetric_pad, o.symmetric_pad};
  auto [top, bottom] = same_padding(x.size(2), o.kernel_h, o.stride, o.dilation);
  auto [left, right] = same_padding(x.size(3), o.kernel_w, o.stride, o.dilation);
  if (top != bottom || left != right) return std::nullopt;
  return std::vector<int64_t>{top, left};
}

torch::Tensor SlimConvImpl::forward(torch::Tensor x) {
  const auto& o = options_;
  std::optional<std::vector<int64_t>> pad = symmetric_padding(x);
  if (!pad) {
    auto [top, bottom] = same_padding(x.size(2), o.kernel_h, o.stride, o.dilation);
    auto [left, right] = same_padding(x.size(3), o.kernel_w, o.stride, o.dilation);
    x = torch::constant_pad_nd(x, {left, right, top, bottom});
    pad = std::vector<int64_t>{0, 0};
  }
  const int64_t groups = o.depthwise ? o.in_channels : 1;
  x = torch::conv2d(x, weight_, bias_, {o.stride, o.stride}, *pad, {o.dilation, o.dilation},
                    groups);
  if (bn_) x = bn_->forward(x);
  switch (o.activation) {
    case Activation::kRelu:
      return torch::relu(x);
    case Activation::kRelu6:
      return torch::clamp(x, 0, 6);
    case Activation::kNone:
      return x;
  }
  return x;
}

torch::Tensor SlimConvImpl::forward_max_pool(torch::Tensor x, int64_t kernel, int64_t stride,
                                             bool fused) {
  const auto& o = options_;
  const bool plain = !bn_ && !o.depthwise && o.stride == 1 && o.dilation == 1 &&
                     o.activation == Activation::kRelu && kernel == 2 && stride == 2;
  if (fused && plain) {
    if (const auto pad = symmetric_padding(x)) {
      return conv_relu_max_pool_2x2(x, weight_, bias_, (*pad)[0], (*pad)[1], true,
                                    x.suggest_memory_format());
    }
  }
  return max_pool(forward(x), kernel, stride, Padding::kValid);
}

torch::Tensor conv_relu_max_pool_2x2(const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& bias, int64_t pad_h, int64_t pad_w,
                                     bool fused, c10::MemoryFormat format) {
  if (fused && kernels::conv_relu_max_pool_serves(x, weight, pad_h, pad_w)) {
    return kernels::conv_relu_max_pool(x, weight, bias, pad_h, pad_w, format);
  }
  return torch::max_pool2d(torch::relu(torch::conv2d(x, weight, bias, 1, {pad_h, pad_w})), 2, 2);
}

torch::Tensor linear_relu_dropout(const torch::Tensor& x, const torch::Tensor& weight,
                                  const torch::Tensor& bias, double keep_prob, bool training,
                                  bool fused) {
  if (fused && training && torch::GradMode::is_enabled() &&
      kernels::linear_relu_dropout_serves(x)) {
    return kernels::linear_relu_dropout(x, weight, bias, keep_prob);
  }
  // F::linear as torch::nn::Linear runs it (an addmm: what the ONNX exporter maps).
  return torch::dropout(torch::relu(torch::nn::functional::linear(x, weight, bias)),
                        1.0 - keep_prob, training);
}

ConvOptions conv(int64_t in, int64_t out, int64_t k, int64_t stride, Padding padding) {
  ConvOptions o;
  o.in_channels = in;
  o.out_channels = out;
  o.kernel_h = o.kernel_w = k;
  o.stride = stride;
  o.padding = padding;
  return o;
}

ConvOptions biased_conv(int64_t in, int64_t out, int64_t k, Init init, double bias, int64_t stride,
                        Padding padding) {
  ConvOptions o = conv(in, out, k, stride, padding);
  o.batch_norm = false;
  o.init = init;
  o.bias_init = bias;
  return o;
}

torch::Tensor max_pool(const torch::Tensor& x, int64_t kernel, int64_t stride, Padding padding) {
  if (padding == Padding::kValid) return torch::max_pool2d(x, kernel, stride);
  auto [top, bottom] = same_padding(x.size(2), kernel, stride);
  auto [left, right] = same_padding(x.size(3), kernel, stride);
  auto padded = torch::constant_pad_nd(x, {left, right, top, bottom},
                                       -std::numeric_limits<float>::infinity());
  return torch::max_pool2d(padded, kernel, stride);
}

torch::Tensor avg_pool(const torch::Tensor& x, int64_t kernel, int64_t stride, Padding padding) {
  if (padding == Padding::kValid) return torch::avg_pool2d(x, kernel, stride);
  auto [top, bottom] = same_padding(x.size(2), kernel, stride);
  auto [left, right] = same_padding(x.size(3), kernel, stride);
  if (top == bottom && left == right && top <= kernel / 2) {
    return torch::avg_pool2d(x, kernel, stride, {top, left},
                             /*ceil_mode=*/false, /*count_include_pad=*/false);
  }
  // Asymmetric: sum over the zero-padded input, divided by the number of
  // real (unpadded) elements under each window.
  const std::vector<int64_t> pad = {left, right, top, bottom};
  auto sums = torch::avg_pool2d(torch::constant_pad_nd(x, pad), kernel, stride) *
              static_cast<double>(kernel * kernel);
  auto ones = torch::ones({1, 1, x.size(2), x.size(3)}, x.options());
  auto counts = torch::avg_pool2d(torch::constant_pad_nd(ones, pad), kernel, stride) *
                static_cast<double>(kernel * kernel);
  return sums / counts;
}

}  // namespace fastnn::models
