#include "models/overfeat.h"

#include <torch/torch.h>

namespace fastnn::models {
namespace {

ConvOptions layer(int64_t in, int64_t out, int64_t k, Init init, double bias = 0.0,
                  int64_t stride = 1, Padding padding = Padding::kSame) {
  return biased_conv(in, out, k, init, bias, stride, padding);
}

const Init kXavier{Init::kXavier};
const Init kFc{Init::kTruncatedNormal, 0.005};

}  // namespace

OverFeatImpl::OverFeatImpl(const ModelOptions& options)
    : ClassifierImpl("overfeat"), dropout_keep_prob_(options.dropout_keep_prob) {
  auto add = [this](const char* name, ConvOptions o) { return register_module(name, SlimConv(o)); };
  conv1_ = add("conv1", layer(options.in_channels, 64, 11, kXavier, 0.0, 4, Padding::kValid));
  conv2_ = add("conv2", layer(64, 256, 5, kXavier, 0.0, 1, Padding::kValid));
  conv3_ = add("conv3", layer(256, 512, 3, kXavier));
  conv4_ = add("conv4", layer(512, 1024, 3, kXavier));
  conv5_ = add("conv5", layer(1024, 1024, 3, kXavier));
  fc6_ = add("fc6", layer(1024, 3072, 6, kFc, 0.1, 1, Padding::kValid));
  fc7_ = add("fc7", layer(3072, 4096, 1, kFc, 0.1));
  auto fc8 = layer(4096, options.num_classes, 1, kFc);
  fc8.activation = Activation::kNone;
  fc8_ = add("fc8", fc8);
}

ModelOutput OverFeatImpl::forward(torch::Tensor x) {
  const double drop = 1.0 - dropout_keep_prob_;
  x = max_pool(conv1_->forward(x), 2, 2, Padding::kValid);
  x = max_pool(conv2_->forward(x), 2, 2, Padding::kValid);
  x = conv4_->forward(conv3_->forward(x));
  x = max_pool(conv5_->forward(x), 2, 2, Padding::kValid);
  x = torch::dropout(fc6_->forward(x), drop, is_training());
  x = torch::dropout(fc7_->forward(x), drop, is_training());
  x = fc8_->forward(x);
  TORCH_CHECK(x.size(2) == 1 && x.size(3) == 1, "overfeat: takes 231x231 images; fc8 is ",
              x.sizes());
  return {x.flatten(1), {}};
}

}  // namespace fastnn::models
