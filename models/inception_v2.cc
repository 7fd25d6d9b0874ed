#include "models/inception_v2.h"

#include <torch/torch.h>

#include <algorithm>

namespace fastnn::models {
namespace {

LayerDef c(const std::string& name, int64_t depth, int64_t k, double stddev = 0.0,
           int64_t stride = 1) {
  return conv_def(name, depth, k, k, stride, Padding::kSame, stddev);
}

// 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3 | 3x3 pool -> 1x1.
StageDef mixed(const std::string& name, int64_t b0, int64_t b1a, int64_t b1b, int64_t b2a,
               int64_t b2b, int64_t b3, LayerDef pool = avg_pool_def(3)) {
  return {
      name,
      {{c("Conv2d_0a_1x1", b0, 1)},
       {c("Conv2d_0a_1x1", b1a, 1, 0.09), c("Conv2d_0b_3x3", b1b, 3)},
       {c("Conv2d_0a_1x1", b2a, 1, 0.09), c("Conv2d_0b_3x3", b2b, 3), c("Conv2d_0c_3x3", b2b, 3)},
       {pool, c("Conv2d_0b_1x1", b3, 1, 0.1)}}};
}

// Stride-2 reduction: 1x1 -> 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | 3x3/2 max-pool.
StageDef reduction(const std::string& name, int64_t b0a, int64_t b0b, int64_t b1a, int64_t b1b) {
  return {name,
          {{c("Conv2d_0a_1x1", b0a, 1, 0.09), c("Conv2d_1a_3x3", b0b, 3, 0, 2)},
           {c("Conv2d_0a_1x1", b1a, 1, 0.09), c("Conv2d_0b_3x3", b1b, 3),
            c("Conv2d_1a_3x3", b1b, 3, 0, 2)},
           {max_pool_def(3, 2)}}};
}

std::vector<StageDef> stages() {
  return {
      {"",
       {{max_pool_def(3, 2),  // MaxPool_2a_3x3
         c("Conv2d_2b_1x1", 64, 1, 0.1), c("Conv2d_2c_3x3", 192, 3),
         max_pool_def(3, 2)}}},  // MaxPool_3a_3x3
      mixed("Mixed_3b", 64, 64, 64, 64, 96, 32),
      mixed("Mixed_3c", 64, 64, 96, 64, 96, 64),
      reduction("Mixed_4a", 128, 160, 64, 96),
      mixed("Mixed_4b", 224, 64, 96, 96, 128, 128),
      mixed("Mixed_4c", 192, 96, 128, 96, 128, 128),
      mixed("Mixed_4d", 160, 128, 160, 128, 160, 96),
      mixed("Mixed_4e", 96, 128, 192, 160, 192, 96),
      reduction("Mixed_5a", 128, 192, 192, 256),
      mixed("Mixed_5b", 352, 192, 320, 160, 224, 128),
      mixed("Mixed_5c", 352, 192, 320, 192, 224, 128, max_pool_def(3)),
  };
}

}  // namespace

SeparableConvImpl::SeparableConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t multiplier,
                                     int64_t stride, const Init& init)
    : in_(in), kernel_(kernel), stride_(stride) {
  // TF's [k, k, in, multiplier] depthwise filter: output channel
  // i * multiplier + m, as for a grouped conv with `in` groups.
  auto dw = torch::empty({in * multiplier, 1, kernel, kernel});
  auto pw = torch::empty({out, in * multiplier, 1, 1});
  init_weight(dw, init);
  init_weight(pw, init);
  depthwise_ = register_parameter("depthwise_weights", dw);
  pointwise_ = register_parameter("pointwise_weights", pw);
  bias_ = register_parameter("bias", torch::zeros({out}));
}

torch::Tensor SeparableConvImpl::forward(torch::Tensor x) {
  auto [top, bottom] = same_padding(x.size(2), kernel_, stride_);
  auto [left, right] = same_padding(x.size(3), kernel_, stride_);
  x = torch::constant_pad_nd(x, {left, right, top, bottom});
  const std::vector<int64_t> stride = {stride_, stride_}, none = {0, 0}, one = {1, 1};
  x = torch::conv2d(x, depthwise_, {}, stride, none, one, in_);
  return torch::relu(torch::conv2d(x, pointwise_, bias_));
}

InceptionV2Impl::InceptionV2Impl(const ModelOptions& options)
    : ClassifierImpl("InceptionV2"),
      conv1_(register_module("Conv2d_1a_7x7",
                             // depthwise multiplier min(int(depth(64) / 3), 8) = 8.
                             SeparableConv(options.in_channels, 64, 7, std::min<int64_t>(64 / 3, 8),
                                           2, Init{Init::kTruncatedNormal, 1.0}))),
      trunk_(*this, 64, stages()) {
  logits_ = register_module("Logits",
                            ConvLogitsHead(conv_logits(options, trunk_.out_channels()), scope()));
}

ModelOutput InceptionV2Impl::forward(torch::Tensor x) {
  x = trunk_.forward(conv1_->forward(x));
  // AvgPool_1a_7x7, VALID, reduced for small inputs.
  x = avg_pool(x, reduced_kernel(x.size(2), 7), 1, Padding::kValid);
  return {logits_->forward(x), {}};
}

}  // namespace fastnn::models
