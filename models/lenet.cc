#include "models/lenet.h"

#include <torch/torch.h>

#include "models/lenet_kernels.h"

namespace fastnn::models {

LeNetImpl::LeNetImpl(const ModelOptions& options) : ClassifierImpl("LeNet") {
  namespace nn = torch::nn;
  conv1_ = register_module("conv1",
                           nn::Conv2d(nn::Conv2dOptions(options.in_channels, 32, 5).padding(2)));
  conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 5).padding(2)));
  const int64_t pooled = image_size_ / 4;
  fc3_ = register_module("fc3", nn::Linear(pooled * pooled * 64, 1024));
  dropout3_ = register_module("dropout3", nn::Dropout(1.0 - options.dropout_keep_prob));
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
  if (x.size(1) == 1 && x.size(2) % 4 == 0 && x.size(3) % 4 == 0 && fused_kernels_apply(x)) {
    // The same values by fused CPU kernels (models/lenet_kernels.h); the
    // second block's output is channels-last, so the flatten below is a view.
    x = conv5x5_relu_maxpool(x, conv1_->weight, conv1_->bias);
    x = conv5x5_relu_maxpool_channels_last(x, conv2_->weight, conv2_->bias);
  } else {
    x = torch::max_pool2d(torch::relu(conv1_->forward(x)), 2, 2);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2, 2);
  }
  // Flattened in TF-slim's order (NHWC: height, width, channel), so that
  // fc3's rows are TensorFlow's (the TensorFlow oracle, docs/design.md).
  x = x.permute({0, 2, 3, 1}).flatten(1);
  if (is_training() && torch::GradMode::is_enabled() && fused_kernels_apply(x) &&
      x.size(1) % 8 == 0) {
    // fc3, ReLU and dropout with a backward pass that skips the zeros.
    x = linear_relu_dropout(x, fc3_->weight, fc3_->bias, 1.0 - dropout3_->options.p());
  } else {
    x = dropout3_->forward(torch::relu(fc3_->forward(x)));
  }
  return {fc4_->forward(x), {}};
}

}  // namespace fastnn::models
