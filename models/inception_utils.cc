#include "models/inception_utils.h"

#include <torch/torch.h>

namespace fastnn::models {
namespace {

// The layers of one branch (or of the stem), convs registered on `owner`.
class LayerStack {
 public:
  LayerStack(torch::nn::Module& owner, int64_t in, std::vector<LayerDef> defs, double stddev)
      : defs_(std::move(defs)) {
    int64_t channels = in;  // output of the last layer outside a fork
    int64_t forked = 0;     // channels concatenated by the fork so far
    for (const auto& d : defs_) {
      if (d.kind != LayerDef::kConv) {
        convs_.emplace_back(nullptr);
        continue;
      }
      const double s = d.stddev > 0 ? d.stddev : stddev;
      convs_.push_back(owner.register_module(d.name, SlimConv(inception_conv(channels, d, s))));
      if (d.fork) {
        forked += d.depth;
      } else {
        channels = d.depth;
      }
    }
    out_channels_ = forked > 0 ? forked : channels;
  }

  torch::Tensor forward(torch::Tensor x) {
    std::vector<torch::Tensor> forked;
    for (size_t i = 0; i < defs_.size(); ++i) {
      const auto& d = defs_[i];
      if (d.kind == LayerDef::kMaxPool) {
        x = max_pool(x, d.kernel_h, d.stride, d.padding);
      } else if (d.kind == LayerDef::kAvgPool) {
        x = avg_pool(x, d.kernel_h, d.stride, d.padding);
      } else if (d.fork) {
        forked.push_back(convs_[i]->forward(x));
      } else {
        x = convs_[i]->forward(x);
      }
    }
    return forked.empty() ? x : torch::cat(forked, 1);
  }

  int64_t out_channels() const { return out_channels_; }

 private:
  std::vector<LayerDef> defs_;
  std::vector<SlimConv> convs_;
  int64_t out_channels_ = 0;
};

}  // namespace

LayerDef conv_def(std::string name, int64_t depth, int64_t kernel_h, int64_t kernel_w,
                  int64_t stride, Padding padding, double stddev) {
  return {LayerDef::kConv, std::move(name), depth, kernel_h, kernel_w, stride, padding, stddev};
}

LayerDef max_pool_def(int64_t kernel, int64_t stride, Padding padding) {
  return {LayerDef::kMaxPool, "", 0, kernel, kernel, stride, padding};
}

LayerDef avg_pool_def(int64_t kernel, int64_t stride, Padding padding) {
  LayerDef d = max_pool_def(kernel, stride, padding);
  d.kind = LayerDef::kAvgPool;
  return d;
}

ConvOptions inception_conv(int64_t in, const LayerDef& def, double stddev) {
  ConvOptions o;
  o.in_channels = in;
  o.out_channels = def.depth;
  o.kernel_h = def.kernel_h;
  o.kernel_w = def.kernel_w;
  o.stride = def.stride;
  o.padding = def.padding;
  if (stddev > 0) o.init = Init{Init::kTruncatedNormal, stddev};
  return o;
}

InceptionTrunk::InceptionTrunk(torch::nn::Module& net, int64_t in_channels,
                               const std::vector<StageDef>& stages, double stddev) {
  int64_t channels = in_channels;
  for (const auto& stage : stages) {
    names_.push_back(stage.name);
    if (stage.name.empty()) {
      auto stack = std::make_shared<LayerStack>(net, channels, stage.branches.at(0), stddev);
      channels = stack->out_channels();
      stages_.push_back([stack](torch::Tensor x) { return stack->forward(x); });
      continue;
    }
    auto mixed = net.register_module(stage.name, std::make_shared<torch::nn::Module>());
    std::vector<std::shared_ptr<LayerStack>> branches;
    int64_t out = 0;
    for (size_t b = 0; b < stage.branches.size(); ++b) {
      auto scope = mixed->register_module("Branch_" + std::to_string(b),
                                          std::make_shared<torch::nn::Module>());
      branches.push_back(std::make_shared<LayerStack>(*scope, channels, stage.branches[b], stddev));
      out += branches.back()->out_channels();
    }
    channels = out;
    stages_.push_back([branches](torch::Tensor x) {
      std::vector<torch::Tensor> outs;
      for (const auto& b : branches) outs.push_back(b->forward(x));
      return torch::cat(outs, 1);
    });
  }
  out_channels_ = channels;
}

torch::Tensor InceptionTrunk::forward(torch::Tensor x, const std::string& tap,
                                      torch::Tensor* tapped) const {
  for (size_t i = 0; i < stages_.size(); ++i) {
    x = stages_[i](x);
    if (tapped != nullptr && !tap.empty() && names_[i] == tap) *tapped = x;
  }
  return x;
}

ConvOptions logits_conv(int64_t in, int64_t classes, const Init& init) {
  ConvOptions o = conv(in, classes, 1);
  o.batch_norm = false;
  o.activation = Activation::kNone;
  o.init = init;
  return o;
}

torch::Tensor spatial_squeeze(const torch::Tensor& logits, const std::string& scope) {
  TORCH_CHECK(logits.size(2) == 1 && logits.size(3) == 1, scope, ": logits map is ", logits.size(2),
              "x", logits.size(3),
              ", not 1x1; the input image size does not suit this network "
              "(set ModelOptions.image_size to the size used)");
  return logits.flatten(1);
}

ConvLogitsOptions conv_logits(const ModelOptions& model, int64_t in_channels, const Init& init) {
  ConvLogitsOptions o;
  o.in_channels = in_channels;
  o.num_classes = model.num_classes;
  o.dropout_keep_prob = model.dropout_keep_prob;
  o.init = init;
  return o;
}

ConvLogitsHeadImpl::ConvLogitsHeadImpl(const ConvLogitsOptions& options, std::string network_scope)
    : network_scope_(std::move(network_scope)) {
  dropout_ =
      register_module(options.dropout_scope, torch::nn::Dropout(1.0 - options.dropout_keep_prob));
  conv_ = register_module(
      options.conv_scope,
      SlimConv(logits_conv(options.in_channels, options.num_classes, options.init)));
}

torch::Tensor ConvLogitsHeadImpl::forward(const torch::Tensor& x) {
  return spatial_squeeze(conv_->forward(dropout_->forward(x)), network_scope_);
}

}  // namespace fastnn::models
