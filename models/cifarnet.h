// CifarNet as defined by TF-slim (research/slim/nets/cifarnet.py), a variant
// of the TensorFlow CIFAR-10 tutorial model after Krizhevsky, "Learning
// Multiple Layers of Features from Tiny Images" (2009): conv 5x5/64 ->
// max-pool 2x2 -> LRN -> conv 5x5/64 -> LRN -> max-pool 2x2 -> fc 384 ->
// dropout -> fc 192 -> logits. Default image size 32.
//
// Variables: CifarNet/{conv1,conv2,fc3,fc4,logits}/{weights,biases}.
// cifarnet_arg_scope: conv weights truncated_normal(0.05) with zero biases;
// fc weights truncated_normal(0.04) with biases 0.1; logits
// truncated_normal(1/192) with zero biases. The L2 regularizer covers fc3
// and fc4 weights only. The flatten before fc3 is in NHWC order, as
// slim.flatten is on TF's tensors, so fc3/weights is TF's [h*w*c, 384]
// matrix transposed.
#pragma once

#include <torch/nn/modules/linear.h>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// tf.nn.lrn on NCHW input: x / (bias + alpha * s)^beta, where s sums x^2
/// over the channels within depth_radius of each channel.
torch::Tensor tf_lrn(const torch::Tensor& x, int64_t depth_radius, double bias, double alpha,
                     double beta);

/// TF-slim's cifarnet; image_size sets the input of fc3.
class CifarNetImpl : public ClassifierImpl {
 public:
  explicit CifarNetImpl(const ModelOptions& options);
  ModelOutput forward(torch::Tensor images) override;
  /// fc3 and fc4 weights: cifarnet_arg_scope regularizes neither the convs
  /// nor the logits.
  std::vector<torch::Tensor> regularized_weights() override;

 private:
  SlimConv conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc3_{nullptr}, fc4_{nullptr}, logits_{nullptr};
  double dropout_keep_prob_;
  /// The CPU kernels where a block has their pattern (ModelOptions).
  bool fused_ = true;
};

}  // namespace fastnn::models
