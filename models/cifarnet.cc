#include "models/cifarnet.h"

#include <torch/torch.h>

namespace fastnn::models {
namespace {

torch::nn::Linear fully_connected(int64_t in, int64_t out, double stddev, double bias) {
  torch::nn::Linear fc(in, out);
  init_weight(fc->weight, {Init::kTruncatedNormal, stddev});
  torch::NoGradGuard no_grad;
  fc->bias.fill_(bias);
  return fc;
}

ConvOptions cifarnet_conv(int64_t in) {
  ConvOptions o = conv(in, 64, 5);
  o.batch_norm = false;
  o.init = {Init::kTruncatedNormal, 5e-2};
  return o;
}

// tf.nn.lrn(depth_radius=4, bias=1.0, alpha=0.001/9.0, beta=0.75).
torch::Tensor cifarnet_lrn(const torch::Tensor& x) { return tf_lrn(x, 4, 1.0, 0.001 / 9.0, 0.75); }

}  // namespace

torch::Tensor tf_lrn(const torch::Tensor& x, int64_t depth_radius, double bias, double alpha,
                     double beta) {
  // torch averages x^2 over a window of `size` channels (zeros beyond the
  // edges count), where TF sums, so alpha is scaled by the window size.
  const int64_t size = 2 * depth_radius + 1;
  namespace F = torch::nn::functional;
  return F::local_response_norm(x, F::LocalResponseNormFuncOptions(size)
                                       .alpha(alpha * static_cast<double>(size))
                                       .beta(beta)
                                       .k(bias));
}

CifarNetImpl::CifarNetImpl(const ModelOptions& options)
    : ClassifierImpl("CifarNet"),
      dropout_keep_prob_(options.dropout_keep_prob),
      fused_(options.fused_kernels) {
  const int64_t size = options.image_size > 0 ? options.image_size : 32;
  const int64_t pooled = size / 2 / 2;  // two VALID 2x2/2 max-pools
  TORCH_CHECK(pooled > 0, "cifarnet: image_size must be at least 4, got ", size);
  conv1_ = register_module("conv1", SlimConv(cifarnet_conv(options.in_channels)));
  conv2_ = register_module("conv2", SlimConv(cifarnet_conv(64)));
  fc3_ = register_module("fc3", fully_connected(pooled * pooled * 64, 384, 0.04, 0.1));
  fc4_ = register_module("fc4", fully_connected(384, 192, 0.04, 0.1));
  logits_ = register_module("logits", fully_connected(192, options.num_classes, 1 / 192.0, 0.0));
}

ModelOutput CifarNetImpl::forward(torch::Tensor x) {
  x = conv1_->forward_max_pool(x, 2, 2, fused_);
  x = cifarnet_lrn(x);
  x = max_pool(cifarnet_lrn(conv2_->forward(x)), 2, 2, Padding::kValid);
  x = x.permute({0, 2, 3, 1}).flatten(1);
  x = linear_relu_dropout(x, fc3_->weight, fc3_->bias, dropout_keep_prob_, is_training(), fused_);
  x = torch::relu(fc4_->forward(x));
  return {logits_->forward(x), {}};
}

std::vector<torch::Tensor> CifarNetImpl::regularized_weights() {
  return {fc3_->weight, fc4_->weight};
}

}  // namespace fastnn::models
