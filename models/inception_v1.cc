#include "models/inception_v1.h"

#include <torch/torch.h>

namespace fastnn::models {
namespace {

LayerDef c(const std::string& name, int64_t depth, int64_t k, int64_t s = 1) {
  return conv_def(name, depth, k, k, s);
}

// A Mixed module: 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 | 3x3 max-pool -> 1x1.
StageDef mixed(const std::string& name, int64_t b0, int64_t b1a, int64_t b1b, int64_t b2a,
               int64_t b2b, int64_t b3, const std::string& b2b_name = "Conv2d_0b_3x3") {
  return {name,
          {{c("Conv2d_0a_1x1", b0, 1)},
           {c("Conv2d_0a_1x1", b1a, 1), c("Conv2d_0b_3x3", b1b, 3)},
           {c("Conv2d_0a_1x1", b2a, 1), c(b2b_name, b2b, 3)},
           {max_pool_def(3), c("Conv2d_0b_1x1", b3, 1)}}};
}

std::vector<StageDef> stages() {
  return {
      {"",
       {{c("Conv2d_1a_7x7", 64, 7, 2), max_pool_def(3, 2),  // MaxPool_2a_3x3
         c("Conv2d_2b_1x1", 64, 1), c("Conv2d_2c_3x3", 192, 3),
         max_pool_def(3, 2)}}},  // MaxPool_3a_3x3
      mixed("Mixed_3b", 64, 96, 128, 16, 32, 32),
      mixed("Mixed_3c", 128, 128, 192, 32, 96, 64),
      {"", {{max_pool_def(3, 2)}}},  // MaxPool_4a_3x3
      mixed("Mixed_4b", 192, 96, 208, 16, 48, 64),
      mixed("Mixed_4c", 160, 112, 224, 24, 64, 64),
      mixed("Mixed_4d", 128, 128, 256, 24, 64, 64),
      mixed("Mixed_4e", 112, 144, 288, 32, 64, 64),
      mixed("Mixed_4f", 256, 160, 320, 32, 128, 128),
      {"", {{max_pool_def(2, 2)}}},  // MaxPool_5a_2x2
      // TF-slim names this one branch-2 conv Conv2d_0a_3x3.
      mixed("Mixed_5b", 256, 160, 320, 32, 128, 128, "Conv2d_0a_3x3"),
      mixed("Mixed_5c", 384, 192, 384, 48, 128, 128),
  };
}

}  // namespace

InceptionV1Impl::InceptionV1Impl(const ModelOptions& options)
    : ClassifierImpl("InceptionV1"), trunk_(*this, options.in_channels, stages(), /*stddev=*/0.01) {
  auto head = conv_logits(options, trunk_.out_channels());
  head.dropout_scope = "Dropout_0b";
  head.conv_scope = "Conv2d_0c_1x1";
  logits_ = register_module("Logits", ConvLogitsHead(head, scope()));
}

ModelOutput InceptionV1Impl::forward(torch::Tensor x) {
  x = trunk_.forward(x);
  // AvgPool_0a_7x7, VALID.
  x = avg_pool(x, reduced_kernel(x.size(2), 7), 1, Padding::kValid);
  return {logits_->forward(x), {}};
}

}  // namespace fastnn::models
