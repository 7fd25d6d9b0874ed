#include "models/resnet.h"

#include <torch/torch.h>

#include <array>
#include <string>

namespace fastnn::models {

namespace {

BatchNormOptions resnet_bn() {
  BatchNormOptions bn;
  bn.decay = 0.997;
  bn.epsilon = 1e-5;
  bn.scale = true;
  return bn;
}

// slim.conv2d under resnet_arg_scope; with_bn = false gives biases instead.
ConvOptions resnet_conv(int64_t in, int64_t out, int64_t k, int64_t stride, bool with_bn,
                        Activation activation) {
  ConvOptions o = conv(in, out, k, stride);
  o.batch_norm = with_bn;
  o.bn = resnet_bn();
  o.activation = activation;
  // conv2d_same: a strided conv pads (k - 1) zeros explicitly, then runs
  // VALID. The kernels here are odd (3, 7), so that is (k - 1) / 2 on each
  // side: the convolution's own padding. A padded copy of the input would
  // cost a fill and a strided copy forward and a copy backward per layer.
  if (stride > 1 && k > 1) {
    TORCH_CHECK(k % 2 == 1, "conv2d_same with an even kernel (", k, ") pads unevenly");
    o.padding = Padding::kValid;
    o.symmetric_pad = (k - 1) / 2;
  }
  return o;
}

// resnet_utils.subsample: a 1x1 max-pool with the given stride.
torch::Tensor subsample(const torch::Tensor& x, int64_t stride) {
  if (stride == 1) return x;
  return x.slice(2, 0, x.size(2), stride).slice(3, 0, x.size(3), stride);
}

std::array<int, 4> units_per_block(int depth) {
  switch (depth) {
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
    case 200:
      return {3, 24, 36, 3};
  }
  TORCH_CHECK(false, "resnet: depth must be 50, 101, 152 or 200, got ", depth);
}

std::string resnet_scope(int version, int depth) {
  TORCH_CHECK(version == 1 || version == 2, "resnet: version must be 1 or 2, got ", version);
  return "resnet_v" + std::to_string(version) + "_" + std::to_string(depth);
}

}  // namespace

// One bottleneck unit: bottleneck_v1 (post-activation) or bottleneck_v2
// (pre-activation).
class ResNetUnitImpl : public torch::nn::Module {
 public:
  ResNetUnitImpl(int version, int64_t depth_in, int64_t depth, int64_t depth_bottleneck,
                 int64_t stride)
      : v2_(version == 2), stride_(stride) {
    const auto kRelu = Activation::kRelu, kNone = Activation::kNone;
    if (v2_) preact_ = register_module("preact", TfBatchNorm(depth_in, resnet_bn()));
    if (depth != depth_in) {
      shortcut_ = register_module("shortcut",
                                  SlimConv(resnet_conv(depth_in, depth, 1, stride, !v2_, kNone)));
    }
    conv1_ = register_module("conv1",
                             SlimConv(resnet_conv(depth_in, depth_bottleneck, 1, 1, true, kRelu)));
    conv2_ = register_module(
        "conv2", SlimConv(resnet_conv(depth_bottleneck, depth_bottleneck, 3, stride, true, kRelu)));
    conv3_ =
        register_module("conv3", SlimConv(resnet_conv(depth_bottleneck, depth, 1, 1, !v2_, kNone)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const auto preact = v2_ ? torch::relu(preact_->forward(x)) : x;
    const auto shortcut = shortcut_ ? shortcut_->forward(preact) : subsample(x, stride_);
    auto r = conv1_->forward(preact);
    r = conv2_->forward(r);
    r = conv3_->forward(r);
    return v2_ ? shortcut + r : torch::relu(shortcut + r);
  }

 private:
  bool v2_;
  int64_t stride_;
  TfBatchNorm preact_{nullptr};
  SlimConv shortcut_{nullptr}, conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
};

ResNetImpl::ResNetImpl(const ModelOptions& options, int version, int depth)
    : ClassifierImpl(resnet_scope(version, depth)) {
  const bool v2 = version == 2;
  conv1_ =
      register_module("conv1", SlimConv(resnet_conv(options.in_channels, 64, 7, 2, !v2,
                                                    v2 ? Activation::kNone : Activation::kRelu)));
  const auto units = units_per_block(depth);
  const std::array<int64_t, 4> base_depths = {64, 128, 256, 512};
  const std::array<int64_t, 4> strides = {2, 2, 2, 1};
  const std::string unit_scope = v2 ? "bottleneck_v2" : "bottleneck_v1";
  int64_t in = 64;
  for (size_t b = 0; b < units.size(); ++b) {
    auto block =
        register_module("block" + std::to_string(b + 1), std::make_shared<torch::nn::Module>());
    for (int u = 0; u < units[b]; ++u) {
      const int64_t stride = u + 1 == units[b] ? strides[b] : 1;
      auto unit = block->register_module("unit_" + std::to_string(u + 1),
                                         std::make_shared<torch::nn::Module>());
      units_.push_back(unit->register_module(
          unit_scope, std::make_shared<ResNetUnitImpl>(version, in, 4 * base_depths[b],
                                                       base_depths[b], stride)));
      in = 4 * base_depths[b];
    }
  }
  if (v2) postnorm_ = register_module("postnorm", TfBatchNorm(in, resnet_bn()));
  logits_ = register_module(
      "logits", SlimConv(resnet_conv(in, options.num_classes, 1, 1, false, Activation::kNone)));
}

ModelOutput ResNetImpl::forward(torch::Tensor x) {
  x = conv1_->forward(x);
  x = max_pool(x, 3, 2, Padding::kSame);
  for (auto& unit : units_) x = unit->forward(x);
  if (postnorm_) x = torch::relu(postnorm_->forward(x));
  x = x.mean({2, 3}, /*keepdim=*/true);
  return {logits_->forward(x).flatten(1), {}};
}

}  // namespace fastnn::models
