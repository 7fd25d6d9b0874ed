#include "models/mobilenet_v1.h"

#include <torch/torch.h>

#include <algorithm>

#include "models/inception_utils.h"

namespace fastnn::models {
namespace {

// TF-slim's _CONV_DEFS after Conv2d_0: (stride, depth) of each depthwise
// separable layer.
struct SepDef {
  int64_t stride, depth;
};
const SepDef kSeparable[] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},  {2, 512}, {1, 512},
                             {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};

ConvOptions mobilenet_v1_conv(ConvOptions o) {
  o.activation = Activation::kRelu6;
  o.bn = {/*decay=*/0.9997, /*epsilon=*/1e-3, /*scale=*/true};
  o.init = Init{Init::kTruncatedNormal, 0.09};
  return o;
}

}  // namespace

MobileNetV1Impl::MobileNetV1Impl(const ModelOptions& options, double depth_multiplier)
    : ClassifierImpl("MobilenetV1") {
  auto depth = [&](int64_t d) {
    return std::max<int64_t>(static_cast<int64_t>(d * depth_multiplier), 8);
  };
  int64_t channels = depth(32);
  layers_.push_back(register_module(
      "Conv2d_0", SlimConv(mobilenet_v1_conv(conv(options.in_channels, channels, 3, 2)))));
  int i = 1;
  for (const auto& def : kSeparable) {
    const std::string base = "Conv2d_" + std::to_string(i++);
    auto dw = conv(channels, channels, 3, def.stride);
    dw.depthwise = true;
    layers_.push_back(register_module(base + "_depthwise", SlimConv(mobilenet_v1_conv(dw))));
    const int64_t out = depth(def.depth);
    layers_.push_back(
        register_module(base + "_pointwise", SlimConv(mobilenet_v1_conv(conv(channels, out, 1)))));
    channels = out;
  }
  logits_ = register_module(
      "Logits",
      ConvLogitsHead(conv_logits(options, channels, Init{Init::kTruncatedNormal, 0.09}), scope()));
}

ModelOutput MobileNetV1Impl::forward(torch::Tensor x) {
  for (auto& layer : layers_) x = layer->forward(x);
  // AvgPool_1a: 7x7 VALID, reduced for small inputs.
  x = avg_pool(x, reduced_kernel(x.size(2), 7), 1, Padding::kValid);
  return {logits_->forward(x), {}};
}

std::shared_ptr<ClassifierImpl> mobilenet_v1(const ModelOptions& options, double depth_multiplier) {
  return std::make_shared<MobileNetV1Impl>(options, depth_multiplier);
}

}  // namespace fastnn::models
