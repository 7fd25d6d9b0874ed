#include "models/inception_resnet_v2.h"

#include <torch/torch.h>

namespace fastnn::models {

InceptionResnetBlockImpl::InceptionResnetBlockImpl(int64_t channels, const ResidualBlockOptions& o,
                                                   const Init& init)
    : MixedImpl(channels, o.branches, init), scale_(o.scale), relu_(o.relu) {
  auto up = conv(out_channels(), channels, 1);
  up.batch_norm = false;
  up.activation = Activation::kNone;
  up.init = init;
  up_ = register_module("Conv2d_1x1", SlimConv(up));
}

torch::Tensor InceptionResnetBlockImpl::forward(torch::Tensor x) {
  auto y = x + scale_ * up_->forward(MixedImpl::forward(x));
  return relu_ ? torch::relu(y) : y;
}

namespace {

constexpr Padding kValid = Padding::kValid;
constexpr Padding kSame = Padding::kSame;

std::vector<BranchSpec> mixed_5b() {
  return {
      {{conv_layer("Conv2d_1x1", 96, {1, 1})}},
      {{conv_layer("Conv2d_0a_1x1", 48, {1, 1}), conv_layer("Conv2d_0b_5x5", 64, {5, 5})}},
      {{conv_layer("Conv2d_0a_1x1", 64, {1, 1}), conv_layer("Conv2d_0b_3x3", 96, {3, 3}),
        conv_layer("Conv2d_0c_3x3", 96, {3, 3})}},
      {{avg_pool_layer("AvgPool_0a_3x3", 3, 1, kSame), conv_layer("Conv2d_0b_1x1", 64, {1, 1})}}};
}

std::vector<BranchSpec> mixed_6a() {
  return {{{conv_layer("Conv2d_1a_3x3", 384, {3, 3}, 2, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 256, {1, 1}), conv_layer("Conv2d_0b_3x3", 256, {3, 3}),
            conv_layer("Conv2d_1a_3x3", 384, {3, 3}, 2, kValid)}},
          {{max_pool_layer("MaxPool_1a_3x3", 3, 2, kValid)}}};
}

std::vector<BranchSpec> mixed_7a() {
  return {{{conv_layer("Conv2d_0a_1x1", 256, {1, 1}),
            conv_layer("Conv2d_1a_3x3", 384, {3, 3}, 2, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 256, {1, 1}),
            conv_layer("Conv2d_1a_3x3", 288, {3, 3}, 2, kValid)}},
          {{conv_layer("Conv2d_0a_1x1", 256, {1, 1}), conv_layer("Conv2d_0b_3x3", 288, {3, 3}),
            conv_layer("Conv2d_1a_3x3", 320, {3, 3}, 2, kValid)}},
          {{max_pool_layer("MaxPool_1a_3x3", 3, 2, kValid)}}};
}

ResidualBlockOptions block35() {
  return {{{{conv_layer("Conv2d_1x1", 32, {1, 1})}},
           {{conv_layer("Conv2d_0a_1x1", 32, {1, 1}), conv_layer("Conv2d_0b_3x3", 32, {3, 3})}},
           {{conv_layer("Conv2d_0a_1x1", 32, {1, 1}), conv_layer("Conv2d_0b_3x3", 48, {3, 3}),
             conv_layer("Conv2d_0c_3x3", 64, {3, 3})}}},
          0.17,
          true};
}

ResidualBlockOptions block17() {
  return {{{{conv_layer("Conv2d_1x1", 192, {1, 1})}},
           {{conv_layer("Conv2d_0a_1x1", 128, {1, 1}), conv_layer("Conv2d_0b_1x7", 160, {1, 7}),
             conv_layer("Conv2d_0c_7x1", 192, {7, 1})}}},
          0.10,
          true};
}

ResidualBlockOptions block8(double scale = 0.20, bool relu = true) {
  return {{{{conv_layer("Conv2d_1x1", 192, {1, 1})}},
           {{conv_layer("Conv2d_0a_1x1", 192, {1, 1}), conv_layer("Conv2d_0b_1x3", 224, {1, 3}),
             conv_layer("Conv2d_0c_3x1", 256, {3, 1})}}},
          scale,
          relu};
}

// slim.repeat: scope `repeat` holding <name>_1 .. <name>_<n>.
std::vector<InceptionResnetBlock> repeat(torch::nn::Module& parent, const std::string& repeat,
                                         const std::string& name, int n, int64_t channels,
                                         const ResidualBlockOptions& o, const Init& init) {
  auto scope = parent.register_module(repeat, std::make_shared<torch::nn::Module>());
  std::vector<InceptionResnetBlock> blocks;
  for (int i = 1; i <= n; ++i) {
    blocks.emplace_back(scope->register_module(name + "_" + std::to_string(i),
                                               InceptionResnetBlock(channels, o, init)));
  }
  return blocks;
}

torch::Tensor run(std::vector<InceptionResnetBlock>& blocks, torch::Tensor x) {
  for (auto& b : blocks) x = b->forward(x);
  return x;
}

}  // namespace

InceptionResnetV2Impl::InceptionResnetV2Impl(const ModelOptions& options)
    : ClassifierImpl("InceptionResnetV2") {
  if (options.image_size > 0) image_size_ = options.image_size;
  const Init init{Init::kXavier, 0.0};  // slim.conv2d's default
  stem_ = LayerChain(
      *this, options.in_channels,
      {conv_layer("Conv2d_1a_3x3", 32, {3, 3}, 2, kValid),
       conv_layer("Conv2d_2a_3x3", 32, {3, 3}, 1, kValid), conv_layer("Conv2d_2b_3x3", 64, {3, 3}),
       max_pool_layer("MaxPool_3a_3x3", 3, 2, kValid),
       conv_layer("Conv2d_3b_1x1", 80, {1, 1}, 1, kValid),
       conv_layer("Conv2d_4a_3x3", 192, {3, 3}, 1, kValid),
       max_pool_layer("MaxPool_5a_3x3", 3, 2, kValid)},
      init);
  int64_t size = stem_.out_size(image_size_);
  mixed_5b_ = register_module("Mixed_5b", Mixed(stem_.out_channels(), mixed_5b(), init));
  const int64_t c35 = mixed_5b_->out_channels();
  block35_ = repeat(*this, "Repeat", "block35", 10, c35, block35(), init);
  mixed_6a_ = register_module("Mixed_6a", Mixed(c35, mixed_6a(), init));
  const int64_t c17 = mixed_6a_->out_channels();
  size = mixed_6a_->out_size(size);
  block17_ = repeat(*this, "Repeat_1", "block17", 20, c17, block17(), init);
  mixed_7a_ = register_module("Mixed_7a", Mixed(c17, mixed_7a(), init));
  const int64_t c8 = mixed_7a_->out_channels();
  block8_ = repeat(*this, "Repeat_2", "block8", 9, c8, block8(), init);
  final_block8_ = register_module("Block8", InceptionResnetBlock(c8, block8(1.0, false), init));
  conv_7b_ = LayerChain(*this, c8, {conv_layer("Conv2d_7b_1x1", 1536, {1, 1})}, init);

  TORCH_CHECK(size >= 5, "image_size: inception_resnet_v2 needs images of ",
              "at least 107x107 (its AuxLogits pool needs a 5x5 map), got ", image_size_);
  AuxHeadOptions aux;
  aux.in_channels = c17;
  aux.feature_size = size;
  aux.num_classes = options.num_classes;
  aux.conv_scope = "Conv2d_2a_5x5";
  aux.fc_scope = "Logits";
  aux.init = init;
  aux_ = register_module("AuxLogits", AuxHead(aux));
  logits_ = register_module("Logits", LogitsHead(conv_7b_.out_channels(), options.num_classes,
                                                 options.dropout_keep_prob));
}

ModelOutput InceptionResnetV2Impl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(2) == image_size_ && x.size(3) == image_size_,
              "InceptionResnetV2 was built for ", image_size_, "x", image_size_,
              " images (ModelOptions.image_size), got ", x.sizes());
  x = stem_.forward(x);
  x = run(block35_, mixed_5b_->forward(x));
  x = run(block17_, mixed_6a_->forward(x));
  auto aux = aux_->forward(x);
  x = run(block8_, mixed_7a_->forward(x));
  x = conv_7b_.forward(final_block8_->forward(x));
  return {logits_->forward(x), aux};
}

std::vector<torch::Tensor> InceptionResnetV2Impl::regularized_weights() {
  auto out = ClassifierImpl::regularized_weights();
  for (const auto& p : named_parameters()) {
    const auto& key = p.key();
    if (key.size() > 5 && key.compare(key.size() - 5, 5, ".bias") == 0) {
      out.push_back(p.value());
    }
  }
  return out;
}

}  // namespace fastnn::models
