#include "models/vgg.h"

#include <torch/torch.h>

#include <array>
#include <string>

namespace fastnn::models {
namespace {

struct VggConfig {
  int depth;
  const char* scope;
  std::array<int, 5> convs_per_stage;
};

constexpr std::array<VggConfig, 3> kConfigs = {{
    {11, "vgg_a", {1, 1, 2, 2, 2}},
    {16, "vgg_16", {2, 2, 3, 3, 3}},
    {19, "vgg_19", {2, 2, 4, 4, 4}},
}};

const VggConfig& vgg_config(int depth) {
  for (const auto& c : kConfigs) {
    if (c.depth == depth) return c;
  }
  TORCH_CHECK(false, "vgg: depth must be 11, 16 or 19, got ", depth);
}

ConvOptions layer(int64_t in, int64_t out, int64_t k, Padding padding = Padding::kSame) {
  ConvOptions o = conv(in, out, k, 1, padding);
  o.batch_norm = false;
  o.init = {Init::kXavier};
  return o;
}

}  // namespace

VggImpl::VggImpl(const ModelOptions& options, int depth)
    : ClassifierImpl(vgg_config(depth).scope),
      dropout_keep_prob_(options.dropout_keep_prob),
      fused_(options.fused_kernels) {
  const std::array<int64_t, 5> widths = {64, 128, 256, 512, 512};
  const auto& config = vgg_config(depth);
  int64_t in = options.in_channels;
  for (size_t s = 0; s < widths.size(); ++s) {
    const std::string name = "conv" + std::to_string(s + 1);
    auto group = register_module(name, std::make_shared<torch::nn::Module>());
    stages_.emplace_back();
    for (int i = 0; i < config.convs_per_stage[s]; ++i) {
      stages_.back().push_back(group->register_module(name + "_" + std::to_string(i + 1),
                                                      SlimConv(layer(in, widths[s], 3))));
      in = widths[s];
    }
  }
  fc6_ = register_module("fc6", SlimConv(layer(512, 4096, 7, Padding::kValid)));
  fc7_ = register_module("fc7", SlimConv(layer(4096, 4096, 1)));
  auto fc8 = layer(4096, options.num_classes, 1);
  fc8.activation = Activation::kNone;
  fc8_ = register_module("fc8", SlimConv(fc8));
}

ModelOutput VggImpl::forward(torch::Tensor x) {
  for (auto& stage : stages_) {
    for (size_t i = 0; i + 1 < stage.size(); ++i) x = stage[i]->forward(x);
    x = stage.back()->forward_max_pool(x, 2, 2, fused_);
  }
  const double drop = 1.0 - dropout_keep_prob_;
  x = torch::dropout(fc6_->forward(x), drop, is_training());
  x = torch::dropout(fc7_->forward(x), drop, is_training());
  x = fc8_->forward(x);
  TORCH_CHECK(x.size(2) == 1 && x.size(3) == 1, scope(), ": takes 224x224 images; fc8 is ",
              x.sizes());
  return {x.flatten(1), {}};
}

}  // namespace fastnn::models
