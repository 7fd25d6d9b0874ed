#include "models/inception_v4.h"

#include <torch/torch.h>

namespace fastnn::models {

BranchLayer conv_layer(std::string scope, int64_t depth, Kernel kernel, int64_t stride,
                       Padding padding) {
  return {BranchLayer::kConv, std::move(scope), depth, kernel, stride, padding};
}

BranchLayer max_pool_layer(std::string scope, int64_t kernel, int64_t stride, Padding padding) {
  BranchLayer l = conv_layer(std::move(scope), 0, {kernel, kernel}, stride, padding);
  l.kind = BranchLayer::kMaxPool;
  return l;
}

BranchLayer avg_pool_layer(std::string scope, int64_t kernel, int64_t stride, Padding padding) {
  BranchLayer l = max_pool_layer(std::move(scope), kernel, stride, padding);
  l.kind = BranchLayer::kAvgPool;
  return l;
}

LayerChain::LayerChain(torch::nn::Module& parent, int64_t in_channels,
                       std::vector<BranchLayer> layers, const Init& init)
    : layers_(std::move(layers)), out_channels_(in_channels) {
  for (const auto& l : layers_) {
    if (l.kind != BranchLayer::kConv) {
      convs_.emplace_back(nullptr);
      continue;
    }
    ConvOptions o;
    o.in_channels = out_channels_;
    o.out_channels = l.depth;
    o.kernel_h = l.kernel.h;
    o.kernel_w = l.kernel.w;
    o.stride = l.stride;
    o.padding = l.padding;
    o.init = init;
    convs_.emplace_back(parent.register_module(l.scope, SlimConv(o)));
    out_channels_ = l.depth;
  }
}

torch::Tensor LayerChain::forward(torch::Tensor x) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    switch (l.kind) {
      case BranchLayer::kConv:
        x = convs_[i]->forward(x);
        break;
      case BranchLayer::kMaxPool:
        x = max_pool(x, l.kernel.h, l.stride, l.padding);
        break;
      case BranchLayer::kAvgPool:
        x = avg_pool(x, l.kernel.h, l.stride, l.padding);
        break;
    }
  }
  return x;
}

int64_t LayerChain::out_size(int64_t size) const {
  for (const auto& l : layers_) {
    if (l.padding == Padding::kSame) {
      size = size >= 1 ? (size + l.stride - 1) / l.stride : 0;
    } else {
      size = size >= l.kernel.h ? (size - l.kernel.h) / l.stride + 1 : 0;
    }
  }
  return size;
}

InceptionBranchImpl::InceptionBranchImpl(int64_t in_channels, const BranchSpec& spec,
                                         const Init& init)
    : chain_(*this, in_channels, spec.layers, init) {
  for (const auto& l : spec.fork) {
    fork_.emplace_back(*this, chain_.out_channels(), std::vector<BranchLayer>{l}, init);
  }
}

torch::Tensor InceptionBranchImpl::forward(torch::Tensor x) {
  x = chain_.forward(x);
  if (fork_.empty()) return x;
  std::vector<torch::Tensor> parts;
  for (auto& f : fork_) parts.push_back(f.forward(x));
  return torch::cat(parts, 1);
}

int64_t InceptionBranchImpl::out_channels() const {
  if (fork_.empty()) return chain_.out_channels();
  int64_t n = 0;
  for (const auto& f : fork_) n += f.out_channels();
  return n;
}

MixedImpl::MixedImpl(int64_t in_channels, const std::vector<BranchSpec>& branches,
                     const Init& init) {
  for (size_t i = 0; i < branches.size(); ++i) {
    branches_.push_back(register_module("Branch_" + std::to_string(i),
                                        InceptionBranch(in_channels, branches[i], init)));
    out_channels_ += branches_.back()->out_channels();
  }
}

torch::Tensor MixedImpl::forward(torch::Tensor x) {
  std::vector<torch::Tensor> parts;
  for (auto& b : branches_) parts.push_back(b->forward(x));
  return torch::cat(parts, 1);
}

torch::nn::Linear slim_fully_connected(int64_t in, int64_t out) {
  torch::nn::Linear fc(in, out);
  init_weight(fc->weight, Init{Init::kXavier, 0.0});
  torch::NoGradGuard no_grad;
  fc->bias.zero_();
  return fc;
}

AuxHeadImpl::AuxHeadImpl(const AuxHeadOptions& o) {
  TORCH_CHECK(o.feature_size >= 5, "AuxLogits needs a feature map of at ",
              "least 5x5 for its 5x5 VALID pool, got ", o.feature_size);
  const int64_t pooled = (o.feature_size - 5) / 3 + 1;
  auto c1 = conv(o.in_channels, 128, 1);
  c1.init = o.init;
  conv1_ = register_module("Conv2d_1b_1x1", SlimConv(c1));
  auto c2 = conv(128, 768, pooled, 1, Padding::kValid);
  c2.init = o.init;
  conv2_ = register_module(o.conv_scope, SlimConv(c2));
  fc_ = register_module(o.fc_scope, slim_fully_connected(768, o.num_classes));
}

torch::Tensor AuxHeadImpl::forward(torch::Tensor x) {
  x = avg_pool(x, 5, 3, Padding::kValid);
  x = conv2_->forward(conv1_->forward(x));
  return fc_->forward(x.flatten(1));
}

LogitsHeadImpl::LogitsHeadImpl(int64_t in_channels, int64_t num_classes, double dropout_keep_prob)
    : dropout_keep_prob_(dropout_keep_prob) {
  fc_ = register_module("Logits", slim_fully_connected(in_channels, num_classes));
}

torch::Tensor LogitsHeadImpl::forward(torch::Tensor x) {
  x = x.mean({2, 3});
  x = torch::dropout(x, 1.0 - dropout_keep_prob_, is_training());
  return fc_->forward(x);
}

namespace {

constexpr Padding kValid = Padding::kValid;
constexpr Padding kSame = Padding::kSame;

std::vector<BranchSpec> mixed_3a() {
  return {{{max_pool_layer("MaxPool_0a_3x3", 3, 2, kValid)}},
          {{conv_layer("Conv2d_0a_3x3", 96, {3, 3}, 2, kValid)}}};
}

std::vector<BranchSpec> mixed_4a() {
  return {{{conv_layer("Conv2d_0a_1x1", 64, {1, 1}),
            conv_layer("Conv2d_1a_3x3", 96, {3, 3}, 1, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 64, {1, 1}), conv_layer("Conv2d_0b_1x7", 64, {1, 7}),
            conv_layer("Conv2d_0c_7x1", 64, {7, 1}),
            conv_layer("Conv2d_1a_3x3", 96, {3, 3}, 1, kValid)}}};
}

std::vector<BranchSpec> mixed_5a() {
  return {{{conv_layer("Conv2d_1a_3x3", 192, {3, 3}, 2, kValid)}},
          {{max_pool_layer("MaxPool_1a_3x3", 3, 2, kValid)}}};
}

std::vector<BranchSpec> inception_a() {
  return {
      {{conv_layer("Conv2d_0a_1x1", 96, {1, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 64, {1, 1}), conv_layer("Conv2d_0b_3x3", 96, {3, 3})}},
      {{conv_layer("Conv2d_0a_1x1", 64, {1, 1}), conv_layer("Conv2d_0b_3x3", 96, {3, 3}),
        conv_layer("Conv2d_0c_3x3", 96, {3, 3})}},
      {{avg_pool_layer("AvgPool_0a_3x3", 3, 1, kSame), conv_layer("Conv2d_0b_1x1", 96, {1, 1})}}};
}

std::vector<BranchSpec> reduction_a() {
  return {{{conv_layer("Conv2d_1a_3x3", 384, {3, 3}, 2, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 192, {1, 1}), conv_layer("Conv2d_0b_3x3", 224, {3, 3}),
            conv_layer("Conv2d_1a_3x3", 256, {3, 3}, 2, kValid)}},
          {{max_pool_layer("MaxPool_1a_3x3", 3, 2, kValid)}}};
}

std::vector<BranchSpec> inception_b() {
  return {
      {{conv_layer("Conv2d_0a_1x1", 384, {1, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 192, {1, 1}), conv_layer("Conv2d_0b_1x7", 224, {1, 7}),
        conv_layer("Conv2d_0c_7x1", 256, {7, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 192, {1, 1}), conv_layer("Conv2d_0b_7x1", 192, {7, 1}),
        conv_layer("Conv2d_0c_1x7", 224, {1, 7}), conv_layer("Conv2d_0d_7x1", 224, {7, 1}),
        conv_layer("Conv2d_0e_1x7", 256, {1, 7})}},
      {{avg_pool_layer("AvgPool_0a_3x3", 3, 1, kSame), conv_layer("Conv2d_0b_1x1", 128, {1, 1})}}};
}

std::vector<BranchSpec> reduction_b() {
  return {{{conv_layer("Conv2d_0a_1x1", 192, {1, 1}),
            conv_layer("Conv2d_1a_3x3", 192, {3, 3}, 2, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 256, {1, 1}), conv_layer("Conv2d_0b_1x7", 256, {1, 7}),
            conv_layer("Conv2d_0c_7x1", 320, {7, 1}),
            conv_layer("Conv2d_1a_3x3", 320, {3, 3}, 2, kValid)}},
          {{max_pool_layer("MaxPool_1a_3x3", 3, 2, kValid)}}};
}

std::vector<BranchSpec> inception_c() {
  return {
      {{conv_layer("Conv2d_0a_1x1", 256, {1, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 384, {1, 1})},
       {conv_layer("Conv2d_0b_1x3", 256, {1, 3}), conv_layer("Conv2d_0c_3x1", 256, {3, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 384, {1, 1}), conv_layer("Conv2d_0b_3x1", 448, {3, 1}),
        conv_layer("Conv2d_0c_1x3", 512, {1, 3})},
       {conv_layer("Conv2d_0d_1x3", 256, {1, 3}), conv_layer("Conv2d_0e_3x1", 256, {3, 1})}},
      {{avg_pool_layer("AvgPool_0a_3x3", 3, 1, kSame), conv_layer("Conv2d_0b_1x1", 256, {1, 1})}}};
}

}  // namespace

InceptionV4Impl::InceptionV4Impl(const ModelOptions& options) : ClassifierImpl("InceptionV4") {
  if (options.image_size > 0) image_size_ = options.image_size;
  const Init init;  // inception_arg_scope: variance_scaling_initializer()
  stem_ = LayerChain(
      *this, options.in_channels,
      {conv_layer("Conv2d_1a_3x3", 32, {3, 3}, 2, kValid),
       conv_layer("Conv2d_2a_3x3", 32, {3, 3}, 1, kValid), conv_layer("Conv2d_2b_3x3", 64, {3, 3})},
      init);
  std::vector<std::pair<std::string, std::vector<BranchSpec>>> stages = {
      {"Mixed_3a", mixed_3a()}, {"Mixed_4a", mixed_4a()}, {"Mixed_5a", mixed_5a()}};
  for (char letter = 'b'; letter <= 'e'; ++letter) {
    stages.emplace_back(std::string("Mixed_5") + letter, inception_a());
  }
  stages.emplace_back("Mixed_6a", reduction_a());
  for (char letter = 'b'; letter <= 'h'; ++letter) {
    stages.emplace_back(std::string("Mixed_6") + letter, inception_b());
  }
  stages.emplace_back("Mixed_7a", reduction_b());
  for (char letter = 'b'; letter <= 'd'; ++letter) {
    stages.emplace_back(std::string("Mixed_7") + letter, inception_c());
  }

  int64_t channels = stem_.out_channels();
  int64_t size = stem_.out_size(image_size_);
  AuxHeadOptions aux;
  for (const auto& [scope, branches] : stages) {
    mixed_.push_back(register_module(scope, Mixed(channels, branches, init)));
    channels = mixed_.back()->out_channels();
    size = mixed_.back()->out_size(size);
    if (scope == "Mixed_6h") {
      aux_tap_ = mixed_.size() - 1;
      aux.in_channels = channels;
      aux.feature_size = size;
    }
  }
  TORCH_CHECK(aux.feature_size >= 5, "image_size: inception_v4 needs images ",
              "of at least 107x107 (its AuxLogits pool needs a 5x5 map), got ", image_size_);
  aux.num_classes = options.num_classes;
  aux.conv_scope = "Conv2d_2a";
  aux.fc_scope = "Aux_logits";
  aux.init = init;
  aux_ = register_module("AuxLogits", AuxHead(aux));
  logits_ = register_module("Logits",
                            LogitsHead(channels, options.num_classes, options.dropout_keep_prob));
}

ModelOutput InceptionV4Impl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(2) == image_size_ && x.size(3) == image_size_,
              "InceptionV4 was built for ", image_size_, "x", image_size_,
              " images (ModelOptions.image_size), got ", x.sizes());
  x = stem_.forward(x);
  torch::Tensor aux;
  for (size_t i = 0; i < mixed_.size(); ++i) {
    x = mixed_[i]->forward(x);
    if (i == aux_tap_) aux = aux_->forward(x);
  }
  return {logits_->forward(x), aux};
}

}  // namespace fastnn::models
