#include "models/mobilenet_v2.h"

#include <torch/torch.h>

#include <algorithm>

#include "models/inception_utils.h"

namespace fastnn::models {
namespace {

// V2_DEF's expanded_conv layers: expansion factor, stride, output depth.
struct BlockDef {
  int64_t expansion, stride, depth;
};
const BlockDef kBlocks[] = {{1, 1, 16},  {6, 2, 24}, {6, 1, 24}, {6, 2, 32},  {6, 1, 32},
                            {6, 1, 32},  {6, 2, 64}, {6, 1, 64}, {6, 1, 64},  {6, 1, 64},
                            {6, 1, 96},  {6, 1, 96}, {6, 1, 96}, {6, 2, 160}, {6, 1, 160},
                            {6, 1, 160}, {6, 1, 320}};

ConvOptions v2_conv(ConvOptions o, Activation activation = Activation::kRelu6) {
  o.activation = activation;
  o.bn = {/*decay=*/0.997, /*epsilon=*/1e-3, /*scale=*/true};
  o.init = Init{Init::kTruncatedNormal, 0.09};
  return o;
}

}  // namespace

int64_t make_divisible(double value, int64_t divisor, int64_t min_value) {
  if (min_value <= 0) min_value = divisor;
  int64_t v = static_cast<int64_t>(value + divisor / 2.0) / divisor * divisor;
  v = std::max(min_value, v);
  if (v < 0.9 * value) v += divisor;
  return v;
}

ExpandedConvImpl::ExpandedConvImpl(int64_t in, int64_t expansion, int64_t out, int64_t stride)
    : residual_(stride == 1 && in == out) {
  int64_t inner = in;
  if (expansion > in) {
    expand_ = register_module("expand", SlimConv(v2_conv(conv(in, expansion, 1))));
    inner = expansion;
  }
  auto dw = conv(inner, inner, 3, stride);
  dw.depthwise = true;
  depthwise_ = register_module("depthwise", SlimConv(v2_conv(dw)));
  project_ = register_module("project", SlimConv(v2_conv(conv(inner, out, 1), Activation::kNone)));
}

torch::Tensor ExpandedConvImpl::forward(torch::Tensor x) {
  auto y = expand_ ? expand_->forward(x) : x;
  y = project_->forward(depthwise_->forward(y));
  return residual_ ? y + x : y;
}

MobileNetV2Impl::MobileNetV2Impl(const ModelOptions& options, double depth_multiplier,
                                 bool finegrain)
    : ClassifierImpl("MobilenetV2") {
  auto depth = [&](int64_t d) { return make_divisible(d * depth_multiplier, 8, 8); };
  int64_t channels = depth(32);
  conv_ = register_module("Conv", SlimConv(v2_conv(conv(options.in_channels, channels, 3, 2))));
  for (size_t i = 0; i < std::size(kBlocks); ++i) {
    const auto& b = kBlocks[i];
    // expand_input_by_factor(n): _make_divisible(in * n, 8), except the
    // first block's factor 1 with divisor 1 (no expand conv).
    const int64_t expansion =
        b.expansion == 1 ? channels : make_divisible(channels * b.expansion, 8);
    const int64_t out = depth(b.depth);
    const std::string name = i == 0 ? "expanded_conv" : "expanded_conv_" + std::to_string(i);
    blocks_.push_back(register_module(name, ExpandedConv(channels, expansion, out, b.stride)));
    channels = out;
  }
  const int64_t last = finegrain && depth_multiplier < 1 ? make_divisible(1280, 8, 8) : depth(1280);
  conv_1_ = register_module("Conv_1", SlimConv(v2_conv(conv(channels, last, 1))));

  auto head = conv_logits(options, last, Init{Init::kTruncatedNormal, 0.09});
  head.dropout_scope = "Dropout";
  logits_ = register_module("Logits", ConvLogitsHead(head, scope()));
}

ModelOutput MobileNetV2Impl::forward(torch::Tensor x) {
  x = conv_->forward(x);
  for (auto& block : blocks_) x = block->forward(x);
  x = conv_1_->forward(x);
  x = x.mean({2, 3}, /*keepdim=*/true);  // global_pool
  return {logits_->forward(x), {}};
}

std::shared_ptr<ClassifierImpl> mobilenet_v2(const ModelOptions& options, double depth_multiplier,
                                             bool finegrain) {
  return std::make_shared<MobileNetV2Impl>(options, depth_multiplier, finegrain);
}

}  // namespace fastnn::models
