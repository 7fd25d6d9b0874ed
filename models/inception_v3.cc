#include "models/inception_v3.h"

#include <torch/torch.h>

namespace fastnn::models {
namespace {

constexpr Padding kValid = Padding::kValid;

LayerDef c(const std::string& name, int64_t depth, int64_t kh, int64_t kw, int64_t stride = 1,
           Padding padding = Padding::kSame) {
  return conv_def(name, depth, kh, kw, stride, padding);
}

LayerDef fork(const std::string& name, int64_t depth, int64_t kh, int64_t kw) {
  LayerDef d = c(name, depth, kh, kw);
  d.fork = true;
  return d;
}

// 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | avg-pool -> 1x1 (35 x 35 grid).
StageDef mixed_5(const std::string& name, int64_t pool_depth,
                 const std::string& b1a = "Conv2d_0a_1x1",
                 const std::string& b1b = "Conv2d_0b_5x5") {
  return {
      name,
      {{c("Conv2d_0a_1x1", 64, 1, 1)},
       {c(b1a, 48, 1, 1), c(b1b, 64, 5, 5)},
       {c("Conv2d_0a_1x1", 64, 1, 1), c("Conv2d_0b_3x3", 96, 3, 3), c("Conv2d_0c_3x3", 96, 3, 3)},
       {avg_pool_def(3), c("Conv2d_0b_1x1", pool_depth, 1, 1)}}};
}

// Factorized 7x7 convolutions on the 17 x 17 grid.
StageDef mixed_6(const std::string& name, int64_t d) {
  return {
      name,
      {{c("Conv2d_0a_1x1", 192, 1, 1)},
       {c("Conv2d_0a_1x1", d, 1, 1), c("Conv2d_0b_1x7", d, 1, 7), c("Conv2d_0c_7x1", 192, 7, 1)},
       {c("Conv2d_0a_1x1", d, 1, 1), c("Conv2d_0b_7x1", d, 7, 1), c("Conv2d_0c_1x7", d, 1, 7),
        c("Conv2d_0d_7x1", d, 7, 1), c("Conv2d_0e_1x7", 192, 1, 7)},
       {avg_pool_def(3), c("Conv2d_0b_1x1", 192, 1, 1)}}};
}

// Expanded filter banks on the 8 x 8 grid; `b1c` names the 3x1 conv of
// Branch_1 (Conv2d_0b_3x1 in Mixed_7b, Conv2d_0c_3x1 in Mixed_7c).
StageDef mixed_7(const std::string& name, const std::string& b1c) {
  return {name,
          {{c("Conv2d_0a_1x1", 320, 1, 1)},
           {c("Conv2d_0a_1x1", 384, 1, 1), fork("Conv2d_0b_1x3", 384, 1, 3), fork(b1c, 384, 3, 1)},
           {c("Conv2d_0a_1x1", 448, 1, 1), c("Conv2d_0b_3x3", 384, 3, 3),
            fork("Conv2d_0c_1x3", 384, 1, 3), fork("Conv2d_0d_3x1", 384, 3, 1)},
           {avg_pool_def(3), c("Conv2d_0b_1x1", 192, 1, 1)}}};
}

std::vector<StageDef> stages() {
  return {
      {"",
       {{c("Conv2d_1a_3x3", 32, 3, 3, 2, kValid), c("Conv2d_2a_3x3", 32, 3, 3, 1, kValid),
         c("Conv2d_2b_3x3", 64, 3, 3), max_pool_def(3, 2, kValid),  // MaxPool_3a_3x3
         c("Conv2d_3b_1x1", 80, 1, 1, 1, kValid), c("Conv2d_4a_3x3", 192, 3, 3, 1, kValid),
         max_pool_def(3, 2, kValid)}}},  // MaxPool_5a_3x3
      mixed_5("Mixed_5b", 32),
      mixed_5("Mixed_5c", 64, "Conv2d_0b_1x1", "Conv_1_0c_5x5"),
      mixed_5("Mixed_5d", 64),
      {"Mixed_6a",
       {{c("Conv2d_1a_1x1", 384, 3, 3, 2, kValid)},
        {c("Conv2d_0a_1x1", 64, 1, 1), c("Conv2d_0b_3x3", 96, 3, 3),
         c("Conv2d_1a_1x1", 96, 3, 3, 2, kValid)},
        {max_pool_def(3, 2, kValid)}}},
      mixed_6("Mixed_6b", 128),
      mixed_6("Mixed_6c", 160),
      mixed_6("Mixed_6d", 160),
      mixed_6("Mixed_6e", 192),
      {"Mixed_7a",
       {{c("Conv2d_0a_1x1", 192, 1, 1), c("Conv2d_1a_3x3", 320, 3, 3, 2, kValid)},
        {c("Conv2d_0a_1x1", 192, 1, 1), c("Conv2d_0b_1x7", 192, 1, 7),
         c("Conv2d_0c_7x1", 192, 7, 1), c("Conv2d_1a_3x3", 192, 3, 3, 2, kValid)},
        {max_pool_def(3, 2, kValid)}}},
      mixed_7("Mixed_7b", "Conv2d_0b_3x1"),
      mixed_7("Mixed_7c", "Conv2d_0c_3x1"),
  };
}

// Side of the map entering the auxiliary head's second conv for an
// n x n image: the VALID stem, Mixed_6a, then AvgPool_1a_5x5 (stride 3).
int64_t aux_map_size(int64_t n) {
  auto valid = [](int64_t size, int64_t k, int64_t s) { return (size - k) / s + 1; };
  n = valid(n, 3, 2);  // Conv2d_1a_3x3
  n = valid(n, 3, 1);  // Conv2d_2a_3x3
  n = valid(n, 3, 2);  // MaxPool_3a_3x3
  n = valid(n, 3, 1);  // Conv2d_4a_3x3
  n = valid(n, 3, 2);  // MaxPool_5a_3x3
  n = valid(n, 3, 2);  // Mixed_6a
  TORCH_CHECK(n >= 5,
              "InceptionV3: image_size too small for the auxiliary head "
              "(needs >= 107)");
  return valid(n, 5, 3);  // AuxLogits/AvgPool_1a_5x5
}

}  // namespace

InceptionV3Impl::InceptionV3Impl(const ModelOptions& options)
    : ClassifierImpl("InceptionV3"), trunk_(*this, options.in_channels, stages()) {
  const int64_t size = options.image_size > 0 ? options.image_size : 299;
  const int64_t k = reduced_kernel(aux_map_size(size), 5);
  auto aux = register_module("AuxLogits", std::make_shared<torch::nn::Module>());
  aux_conv1_ = aux->register_module("Conv2d_1b_1x1", SlimConv(conv(768, 128, 1)));
  auto conv2 = conv(128, 768, k, 1, Padding::kValid);
  conv2.init = Init{Init::kTruncatedNormal, 0.01};
  const std::string ks = std::to_string(k);
  aux_conv2_ = aux->register_module("Conv2d_2a_" + ks + "x" + ks, SlimConv(conv2));
  aux_logits_ = aux->register_module(
      "Conv2d_2b_1x1",
      SlimConv(logits_conv(768, options.num_classes, Init{Init::kTruncatedNormal, 0.001})));

  logits_ = register_module("Logits",
                            ConvLogitsHead(conv_logits(options, trunk_.out_channels()), scope()));
}

ModelOutput InceptionV3Impl::forward(torch::Tensor x) {
  torch::Tensor mixed_6e;
  x = trunk_.forward(x, "Mixed_6e", &mixed_6e);

  auto aux = avg_pool(mixed_6e, 5, 3, Padding::kValid);  // AvgPool_1a_5x5
  aux = aux_conv2_->forward(aux_conv1_->forward(aux));
  aux = spatial_squeeze(aux_logits_->forward(aux), scope() + "/AuxLogits");

  // AvgPool_1a_8x8, VALID, reduced for small inputs.
  x = avg_pool(x, reduced_kernel(x.size(2), 8), 1, Padding::kValid);
  return {logits_->forward(x), aux};
}

}  // namespace fastnn::models
