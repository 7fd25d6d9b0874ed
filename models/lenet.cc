#include "models/lenet.h"

#include <torch/torch.h>

#include "models/layers.h"

namespace fastnn::models {

LeNetImpl::LeNetImpl(const ModelOptions& options)
    : ClassifierImpl("LeNet"),
      keep_prob_(options.dropout_keep_prob),
      fused_(options.fused_kernels) {
  namespace nn = torch::nn;
  conv1_ = register_module("conv1",
                           nn::Conv2d(nn::Conv2dOptions(options.in_channels, 32, 5).padding(2)));
  conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 5).padding(2)));
  const int64_t pooled = image_size_ / 4;
  fc3_ = register_module("fc3", nn::Linear(pooled * pooled * 64, 1024));
  fc4_ = register_module("fc4", nn::Linear(1024, options.num_classes));
  for (auto& p : named_parameters()) {
    if (p.key().find("weight") != std::string::npos) {
      truncated_normal_(p.value(), 0.1);
    } else {
      torch::NoGradGuard no_grad;
      p.value().zero_();
    }
  }
}

ModelOutput LeNetImpl::forward(torch::Tensor x) {
  x = conv_relu_max_pool_2x2(x, conv1_->weight, conv1_->bias, 2, 2, fused_);
  // Channels-last, so that the flatten below is a view.
  x = conv_relu_max_pool_2x2(x, conv2_->weight, conv2_->bias, 2, 2, fused_,
                             c10::MemoryFormat::ChannelsLast);
  // Flattened in TF-slim's order (NHWC: height, width, channel), so that
  // fc3's rows are TensorFlow's (the TensorFlow oracle, docs/design.md).
  x = x.permute({0, 2, 3, 1}).flatten(1);
  x = linear_relu_dropout(x, fc3_->weight, fc3_->bias, keep_prob_, is_training(), fused_);
  return {fc4_->forward(x), {}};
}

}  // namespace fastnn::models
