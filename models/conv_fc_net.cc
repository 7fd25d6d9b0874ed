#include "models/conv_fc_net.h"

#include <torch/torch.h>

#include <string>

namespace fastnn::models {
namespace {

constexpr const char* kNames[] = {"conv1", "conv2", "conv3", "conv4", "conv5", "fc6", "fc7", "fc8"};
// conv1..conv5 take xavier weights; fc6..fc8 truncated_normal(0.005).
constexpr size_t kConvLayers = 5;

}  // namespace

ConvFcNetImpl::ConvFcNetImpl(const ConvFcLayout& layout, const ModelOptions& options)
    : ClassifierImpl(layout.scope),
      pool_kernel_(layout.pool_kernel),
      image_size_(layout.image_size),
      dropout_keep_prob_(options.dropout_keep_prob),
      fused_(options.fused_kernels) {
  const Init xavier{Init::kXavier};
  const Init fully_connected{Init::kTruncatedNormal, 0.005};
  int64_t in_channels = options.in_channels;
  for (size_t index = 0; index < layout.layers.size(); ++index) {
    const ConvFcLayer& layer = layout.layers[index];
    const ConvOptions conv = biased_conv(in_channels, layer.out_channels, layer.kernel,
                                         index < kConvLayers ? xavier : fully_connected, layer.bias,
                                         layer.stride, layer.padding);
    layers_.push_back(register_module(kNames[index], SlimConv(conv)));
    in_channels = layer.out_channels;
  }
  ConvOptions fc8 = biased_conv(in_channels, options.num_classes, 1, fully_connected,
                                layout.fc8_bias, 1, Padding::kSame);
  fc8.activation = Activation::kNone;
  layers_.push_back(register_module(kNames[layout.layers.size()], SlimConv(fc8)));
}

ModelOutput ConvFcNetImpl::forward(torch::Tensor x) {
  const double drop = 1.0 - dropout_keep_prob_;
  const int64_t pool = pool_kernel_;
  x = layers_[0]->forward_max_pool(x, pool, 2, fused_);
  x = layers_[1]->forward_max_pool(x, pool, 2, fused_);
  x = layers_[3]->forward(layers_[2]->forward(x));
  x = layers_[4]->forward_max_pool(x, pool, 2, fused_);
  x = torch::dropout(layers_[5]->forward(x), drop, is_training());
  x = torch::dropout(layers_[6]->forward(x), drop, is_training());
  x = layers_[7]->forward(x);
  const std::string size = std::to_string(image_size_);
  TORCH_CHECK(x.size(2) == 1 && x.size(3) == 1, scope(), ": takes ", size, "x", size,
              " images; fc8 is ", x.sizes());
  return {x.flatten(1), {}};
}

namespace {

// research/slim/nets/alexnet.py's sizes and biases.
const ConvFcLayout kAlexNetV2Layout{"alexnet_v2",
                                    {{{64, 11, 4, Padding::kValid, 0.1},
                                      {192, 5, 1, Padding::kSame, 0.1},
                                      {384, 3, 1, Padding::kSame, 0.1},
                                      {384, 3, 1, Padding::kSame, 0.1},
                                      {256, 3, 1, Padding::kSame, 0.1},
                                      {4096, 5, 1, Padding::kValid, 0.1},
                                      {4096, 1, 1, Padding::kSame, 0.1}}},
                                    /*fc8_bias=*/0.0,
                                    /*pool_kernel=*/3,
                                    /*image_size=*/224};

// research/slim/nets/overfeat.py's.
const ConvFcLayout kOverFeatLayout{"overfeat",
                                   {{{64, 11, 4, Padding::kValid, 0.0},
                                     {256, 5, 1, Padding::kValid, 0.0},
                                     {512, 3, 1, Padding::kSame, 0.0},
                                     {1024, 3, 1, Padding::kSame, 0.0},
                                     {1024, 3, 1, Padding::kSame, 0.0},
                                     {3072, 6, 1, Padding::kValid, 0.1},
                                     {4096, 1, 1, Padding::kSame, 0.1}}},
                                   /*fc8_bias=*/0.0,
                                   /*pool_kernel=*/2,
                                   /*image_size=*/231};

}  // namespace

AlexNetV2Impl::AlexNetV2Impl(const ModelOptions& options)
    : ConvFcNetImpl(kAlexNetV2Layout, options) {}

OverFeatImpl::OverFeatImpl(const ModelOptions& options) : ConvFcNetImpl(kOverFeatLayout, options) {}

}  // namespace fastnn::models
