#include "models/nasnet.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace fastnn::models {
namespace {

// variance_scaling_initializer(factor=2.0, mode='FAN_OUT'): truncated
// normal with stddev sqrt(1.3 * 2 / fan_out).
void fan_out_init(torch::Tensor w, int64_t fan_out) {
  truncated_normal_(w, std::sqrt(2.6 / static_cast<double>(fan_out)));
}

int64_t ceil_half(int64_t size) { return (size + 1) / 2; }

// slim.conv2d under the nasnet arg_scope: weights only, no activation.
class PlainConvImpl : public torch::nn::Module {
 public:
  PlainConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
                Padding padding = Padding::kSame)
      : stride_(stride), padding_(padding) {
    auto w = torch::empty({out, in, kernel, kernel});
    fan_out_init(w, out * kernel * kernel);
    weight_ = register_parameter("weight", w);
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t k = weight_.size(2);
    if (padding_ == Padding::kSame && k > 1) {
      auto [top, bottom] = same_padding(x.size(2), k, stride_);
      auto [left, right] = same_padding(x.size(3), k, stride_);
      x = torch::constant_pad_nd(x, {left, right, top, bottom});
    }
    return torch::conv2d(x, weight_, torch::Tensor(), stride_);
  }

 private:
  int64_t stride_;
  Padding padding_;
  torch::Tensor weight_;
};
TORCH_MODULE(PlainConv);

// slim.separable_conv2d(depth_multiplier=1) without biases: a k x k
// depthwise conv (SAME, strided) and a 1x1 pointwise conv.
class SeparableConvImpl : public torch::nn::Module {
 public:
  SeparableConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride) : stride_(stride) {
    auto dw = torch::empty({in, 1, kernel, kernel});
    fan_out_init(dw, kernel * kernel);
    depthwise_ = register_parameter("depthwise_weights", dw);
    auto pw = torch::empty({out, in, 1, 1});
    fan_out_init(pw, out);
    pointwise_ = register_parameter("pointwise_weights", pw);
  }
  torch::Tensor forward(torch::Tensor x) {
    const int64_t k = depthwise_.size(2);
    auto [top, bottom] = same_padding(x.size(2), k, stride_);
    auto [left, right] = same_padding(x.size(3), k, stride_);
    x = torch::constant_pad_nd(x, {left, right, top, bottom});
    const std::vector<int64_t> stride = {stride_, stride_}, pad = {0, 0};
    x = torch::conv2d(x, depthwise_, torch::Tensor(), stride, pad, {1, 1}, x.size(1));
    return torch::conv2d(x, pointwise_);
  }

 private:
  int64_t stride_;
  torch::Tensor depthwise_, pointwise_;
};
TORCH_MODULE(SeparableConv);

// nasnet_utils.factorized_reduction, its variables registered on `parent`
// (TF-slim opens no scope for it). Stride 1: path_conv + path_bn. Stride
// 2: two half-depth 1x1 convs on the even and the odd (shifted) pixels,
// concatenated, then final_path_bn.
struct FactorizedReduction {
  int64_t stride = 0;  // 0: not built
  PlainConv path1{nullptr}, path2{nullptr};
  TfBatchNorm bn{nullptr};

  void build(torch::nn::Module& parent, int64_t in, int64_t out, int64_t s,
             const BatchNormOptions& bn_options) {
    TORCH_CHECK(out % 2 == 0, "factorized_reduction: odd depth ", out);
    stride = s;
    if (s == 1) {
      path1 = parent.register_module("path_conv", PlainConv(in, out, 1));
      bn = parent.register_module("path_bn", TfBatchNorm(out, bn_options));
      return;
    }
    path1 = parent.register_module("path1_conv", PlainConv(in, out / 2, 1));
    path2 = parent.register_module("path2_conv", PlainConv(in, out / 2, 1));
    bn = parent.register_module("final_path_bn", TfBatchNorm(out, bn_options));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    if (stride == 1) return bn->forward(path1->forward(x));
    using torch::indexing::Slice;
    auto a = x.index({Slice(), Slice(), Slice(0, {}, 2), Slice(0, {}, 2)});
    auto shifted = torch::constant_pad_nd(x, {0, 1, 0, 1})
                       .index({Slice(), Slice(), Slice(1, {}), Slice(1, {})});
    auto b = shifted.index({Slice(), Slice(), Slice(0, {}, 2), Slice(0, {}, 2)});
    return bn->forward(torch::cat({path1->forward(a), path2->forward(b)}, /*dim=*/1));
  }
};

enum class OpKind { kSeparable, kAvgPool, kMaxPool, kNone };
struct OpDef {
  OpKind kind;
  int64_t kernel;  // separable_KxK_2 or pool_KxK
};

// NasNetANormalCell / NasNetAReductionCell: operations, the hidden states
// each operation reads (0: this cell's 1x1 input, 1: the previous cell's
// output, 2+: earlier combinations) and the states left out of the output.
struct CellDef {
  OpDef ops[10];
  int64_t inputs[10];
  bool used[7];
};
constexpr OpDef kSep3{OpKind::kSeparable, 3}, kSep5{OpKind::kSeparable, 5},
    kSep7{OpKind::kSeparable, 7}, kAvg3{OpKind::kAvgPool, 3}, kMax3{OpKind::kMaxPool, 3},
    kNone{OpKind::kNone, 1};
const CellDef kNormalCell = {{kSep5, kSep3, kSep5, kSep3, kAvg3, kNone, kAvg3, kAvg3, kSep3, kNone},
                             {0, 1, 1, 1, 0, 1, 1, 1, 0, 0},
                             {true, false, false, false, false, false, false}};
const CellDef kReductionCell = {
    {kSep5, kSep7, kMax3, kSep7, kAvg3, kSep5, kNone, kAvg3, kSep3, kMax3},
    {0, 1, 0, 1, 0, 1, 3, 2, 2, 0},
    {true, true, true, false, false, false, false}};

// One operation of a comb_iter ("left" or "right"), drop path included.
class CellOpImpl : public torch::nn::Module {
 public:
  CellOpImpl(const OpDef& def, int64_t in, int64_t filters, int64_t stride,
             const BatchNormOptions& bn, double keep_prob)
      : def_(def), stride_(stride), keep_prob_(keep_prob) {
    const std::string k = std::to_string(def.kernel);
    const std::string kxk = k + "x" + k + "_";
    if (def.kind == OpKind::kSeparable) {
      for (int64_t i = 1; i <= 2; ++i) {
        seps_.push_back(register_module(
            "separable_" + kxk + std::to_string(i),
            SeparableConv(i == 1 ? in : filters, filters, def.kernel, i == 1 ? stride : 1)));
        bns_.push_back(
            register_module("bn_sep_" + kxk + std::to_string(i), TfBatchNorm(filters, bn)));
      }
    } else if (in != filters || (def.kind == OpKind::kNone && stride > 1)) {
      const int64_t conv_stride = def.kind == OpKind::kNone ? stride : 1;
      conv_ = register_module("1x1", PlainConv(in, filters, 1, conv_stride));
      bns_.push_back(register_module("bn_1", TfBatchNorm(filters, bn)));
    }
  }

  torch::Tensor forward(torch::Tensor x, double progress) {
    switch (def_.kind) {
      case OpKind::kSeparable:
        for (size_t i = 0; i < seps_.size(); ++i)
          x = bns_[i]->forward(seps_[i]->forward(torch::relu(x)));
        break;
      case OpKind::kAvgPool:
      case OpKind::kMaxPool:
        x = def_.kind == OpKind::kAvgPool ? avg_pool(x, def_.kernel, stride_, Padding::kSame)
                                          : max_pool(x, def_.kernel, stride_, Padding::kSame);
        if (conv_) x = bns_[0]->forward(conv_->forward(x));
        break;
      case OpKind::kNone:
        if (conv_) x = bns_[0]->forward(conv_->forward(torch::relu(x)));
        return x;  // no drop path on identities
    }
    return drop_path(x, progress);
  }

 private:
  // _apply_drop_path 'v3': keep = 1 - progress * (1 - layer's keep).
  torch::Tensor drop_path(const torch::Tensor& x, double progress) {
    const double keep = 1.0 - std::min(progress, 1.0) * (1.0 - keep_prob_);
    if (!is_training() || keep >= 1.0) return x;
    auto mask = torch::floor(keep + torch::rand({x.size(0), 1, 1, 1}, x.options()));
    return x / keep * mask;
  }

  OpDef def_;
  int64_t stride_;
  double keep_prob_;
  std::vector<SeparableConv> seps_;
  std::vector<TfBatchNorm> bns_;
  PlainConv conv_{nullptr};
};
TORCH_MODULE(CellOp);

}  // namespace

// A NASNet-A cell (NasNetABaseCell.__call__). Sizes are tracked at
// construction so that the same reductions as TF-slim's are built.
class NasNetCellImpl : public torch::nn::Module {
 public:
  /// prev_channels == 0: no previous state (the first cell).
  NasNetCellImpl(bool reduction, int64_t in_channels, int64_t in_size, int64_t prev_channels,
                 int64_t prev_size, int64_t filters, const BatchNormOptions& bn, double keep_prob)
      : def_(reduction ? kReductionCell : kNormalCell) {
    if (prev_channels == 0) {
      prev_channels = in_channels;
      prev_size = in_size;
    } else if (prev_size != in_size) {
      prev_reduce_.build(*this, prev_channels, filters, 2, bn);
      prev_channels = filters;
      prev_size = ceil_half(prev_size);
    } else if (prev_channels != filters) {
      prev_1x1_ = register_module("prev_1x1", PlainConv(prev_channels, filters, 1));
      prev_bn_ = register_module("prev_bn", TfBatchNorm(filters, bn));
      prev_channels = filters;
    }
    conv_ = register_module("1x1", PlainConv(in_channels, filters, 1));
    bn_ = register_module("beginning_bn", TfBatchNorm(filters, bn));

    std::vector<std::pair<int64_t, int64_t>> states = {{filters, in_size},
                                                       {prev_channels, prev_size}};
    const int64_t stride = reduction ? 2 : 1;
    for (int64_t i = 0; i < 5; ++i) {
      auto comb =
          register_module("comb_iter_" + std::to_string(i), std::make_shared<torch::nn::Module>());
      int64_t size = 0;
      for (int64_t side = 0; side < 2; ++side) {
        const int64_t slot = 2 * i + side;
        const auto [channels, in] = states[def_.inputs[slot]];
        const int64_t op_stride = def_.inputs[slot] < 2 ? stride : 1;
        ops_.push_back(comb->register_module(
            side == 0 ? "left" : "right",
            CellOp(def_.ops[slot], channels, filters, op_stride, bn, keep_prob)));
        size = op_stride > 1 ? ceil_half(in) : in;
      }
      states.push_back({filters, size});
    }
    auto output = register_module("cell_output", std::make_shared<torch::nn::Module>());
    const int64_t final_size = states.back().second;
    for (size_t i = 0; i < states.size(); ++i) {
      reducers_.emplace_back();
      if (def_.used[i]) continue;
      const auto [channels, size] = states[i];
      if (channels != filters || size != final_size) {
        auto parent = output->register_module("reduction_" + std::to_string(i),
                                              std::make_shared<torch::nn::Module>());
        reducers_.back().build(*parent, channels, filters, size != final_size ? 2 : 1, bn);
      }
      out_channels_ += filters;
    }
    out_size_ = final_size;
  }

  torch::Tensor forward(torch::Tensor net, torch::Tensor prev, double progress) {
    if (!prev.defined()) {
      prev = net;
    } else if (prev_reduce_.stride) {
      prev = prev_reduce_.forward(torch::relu(prev));
    } else if (prev_1x1_) {
      prev = prev_bn_->forward(prev_1x1_->forward(torch::relu(prev)));
    }
    std::vector<torch::Tensor> states = {bn_->forward(conv_->forward(torch::relu(net))), prev};
    for (int64_t i = 0; i < 5; ++i) {
      auto left = ops_[2 * i]->forward(states[def_.inputs[2 * i]], progress);
      auto right = ops_[2 * i + 1]->forward(states[def_.inputs[2 * i + 1]], progress);
      states.push_back(left + right);
    }
    std::vector<torch::Tensor> outputs;
    for (size_t i = 0; i < states.size(); ++i) {
      if (def_.used[i]) continue;
      outputs.push_back(reducers_[i].stride ? reducers_[i].forward(states[i]) : states[i]);
    }
    return torch::cat(outputs, /*dim=*/1);
  }

  int64_t out_channels() const { return out_channels_; }
  int64_t out_size() const { return out_size_; }

 private:
  const CellDef& def_;
  FactorizedReduction prev_reduce_;
  PlainConv prev_1x1_{nullptr}, conv_{nullptr};
  TfBatchNorm prev_bn_{nullptr}, bn_{nullptr};
  std::vector<CellOp> ops_;
  std::vector<FactorizedReduction> reducers_;
  int64_t out_channels_ = 0, out_size_ = 0;
};

NasNetConfig nasnet_config(const std::string& name) {
  NasNetConfig c;  // large_imagenet_config
  if (name == "nasnet_cifar") {
    c.imagenet_stem = false;
    c.num_conv_filters = 32;
    c.skip_reduction_layer_input = false;
    c.drop_path_keep_prob = 0.6;
    c.total_training_steps = 937500;
    c.bn.decay = 0.9;
    c.bn.epsilon = 1e-5;
    c.default_image_size = 32;
  } else if (name == "nasnet_mobile") {
    c.stem_multiplier = 1.0;
    c.num_cells = 12;
    c.num_conv_filters = 44;
    c.skip_reduction_layer_input = false;
    c.drop_path_keep_prob = 1.0;
    c.default_image_size = 224;
  } else {
    TORCH_CHECK(name == "nasnet_large", "nasnet: unknown variant '", name,
                "'; valid: nasnet_cifar, nasnet_mobile, nasnet_large");
  }
  c.bn.scale = true;
  return c;
}

NasNetImpl::NasNetImpl(const ModelOptions& options, const NasNetConfig& config)
    : ClassifierImpl(""), config_(config) {
  const auto& bn = config.bn;
  image_size_ = options.image_size > 0 ? options.image_size : config.default_image_size;
  // Output channels and side of each cell_outputs entry; {0, 0} is None.
  std::vector<std::pair<int64_t, int64_t>> outs = {{0, 0}};
  if (config.imagenet_stem) {
    TORCH_CHECK(image_size_ >= 3, "nasnet: image_size ", image_size_, " is below 3");
    const auto ch = static_cast<int64_t>(32 * config.stem_multiplier);
    stem_conv_ =
        register_module("conv0", PlainConv(options.in_channels, ch, 3, 2, Padding::kValid).ptr());
    stem_bn_ = register_module("conv0_bn", TfBatchNorm(ch, bn));
    outs.push_back({ch, (image_size_ - 3) / 2 + 1});
  } else {
    const auto ch = static_cast<int64_t>(config.num_conv_filters * config.stem_multiplier);
    stem_conv_ = register_module("l1_stem_3x3", PlainConv(options.in_channels, ch, 3).ptr());
    stem_bn_ = register_module("l1_stem_bn", TfBatchNorm(ch, bn));
    outs.push_back({ch, image_size_});
  }

  const int64_t total_cells = config.num_cells + 2 + (config.imagenet_stem ? 2 : 0);
  int64_t cell_num = 0;  // true_cell_num: stem cells included
  auto add_cell = [&](const std::string& name, bool reduction, double scaling, int64_t prev) {
    const double ratio = (cell_num++ + 1) / static_cast<double>(total_cells);
    const double keep = 1.0 - ratio * (1.0 - config.drop_path_keep_prob);
    const auto filters = static_cast<int64_t>(config.num_conv_filters * scaling);
    auto cell = register_module(name, std::make_shared<NasNetCellImpl>(
                                          reduction, outs.back().first, outs.back().second,
                                          outs[prev].first, outs[prev].second, filters, bn, keep));
    steps_.push_back({cell, prev});
    outs.push_back({cell->out_channels(), cell->out_size()});
  };
  auto two_back = [&] { return static_cast<int64_t>(outs.size()) - 2; };

  if (config.imagenet_stem) {
    double scaling = 1.0 / (config.filter_scaling_rate * config.filter_scaling_rate);
    for (int64_t i = 0; i < 2; ++i) {
      add_cell("cell_stem_" + std::to_string(i), true, scaling, two_back());
      scaling *= config.filter_scaling_rate;
    }
  }
  std::vector<int64_t> reductions;  // calc_reduction_layers
  for (int64_t k = 1; k <= config.num_reduction_layers; ++k) {
    reductions.push_back(static_cast<int64_t>(
        static_cast<double>(k) / (config.num_reduction_layers + 1) * config.num_cells));
  }
  const int64_t aux_cell = reductions.size() >= 2 ? reductions[1] - 1 : -1;
  double scaling = 1.0;
  for (int64_t i = 0; i < config.num_cells; ++i) {
    int64_t prev = two_back();
    auto found = std::find(reductions.begin(), reductions.end(), i);
    if (found != reductions.end()) {
      scaling *= config.filter_scaling_rate;
      add_cell("reduction_cell_" + std::to_string(found - reductions.begin()), true, scaling,
               two_back());
    }
    if (!config.skip_reduction_layer_input) prev = two_back();
    add_cell("cell_" + std::to_string(i), false, scaling, prev);
    if (config.use_aux_head && i == aux_cell) {
      const auto [channels, size] = outs.back();
      TORCH_CHECK(size >= 5, "nasnet: image_size ", image_size_, " leaves a ", size, "x", size,
                  " map for the 5x5 aux pool (cell_", i, ")");
      aux_after_ = static_cast<int64_t>(steps_.size()) - 1;
      auto aux = register_module("aux_" + std::to_string(i), std::make_shared<torch::nn::Module>())
                     ->register_module("aux_logits", std::make_shared<torch::nn::Module>());
      aux_proj_ = aux->register_module("proj", PlainConv(channels, 128, 1).ptr());
      aux_bn0_ = aux->register_module("aux_bn0", TfBatchNorm(128, bn));
      const int64_t pooled = (size - 5) / 3 + 1;
      aux_conv_ =
          aux->register_module("Conv", PlainConv(128, 768, pooled, 1, Padding::kValid).ptr());
      aux_bn1_ = aux->register_module("aux_bn1", TfBatchNorm(768, bn));
      aux_fc_ = aux->register_module("FC", torch::nn::Linear(768, options.num_classes));
    }
  }
  auto final_layer = register_module("final_layer", std::make_shared<torch::nn::Module>());
  dropout_ =
      final_layer->register_module("dropout", torch::nn::Dropout(1.0 - options.dropout_keep_prob));
  fc_ =
      final_layer->register_module("FC", torch::nn::Linear(outs.back().first, options.num_classes));
  for (auto& fc : {aux_fc_, fc_}) {
    if (!fc) continue;
    fan_out_init(fc->weight, options.num_classes);
    torch::NoGradGuard no_grad;
    fc->bias.zero_();
  }
}

ModelOutput NasNetImpl::forward(torch::Tensor images) {
  TORCH_CHECK(images.dim() == 4 && images.size(2) == image_size_ && images.size(3) == image_size_,
              "nasnet: built for ", image_size_, "x", image_size_, " images, got ", images.sizes());
  const double progress = static_cast<double>(global_step_) / config_.total_training_steps;
  auto stem = stem_conv_->as<PlainConv>()->forward(images);
  std::vector<torch::Tensor> outs = {torch::Tensor(), stem_bn_->forward(stem)};
  ModelOutput result;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const auto& step = steps_[i];
    outs.push_back(step.cell->forward(outs.back(), outs[step.prev], progress));
    if (static_cast<int64_t>(i) == aux_after_ && is_training()) {
      auto x = avg_pool(torch::relu(outs.back()), 5, 3, Padding::kValid);
      x = torch::relu(aux_bn0_->forward(aux_proj_->as<PlainConv>()->forward(x)));
      x = torch::relu(aux_bn1_->forward(aux_conv_->as<PlainConv>()->forward(x)));
      result.aux_logits = aux_fc_->forward(x.flatten(1));
    }
  }
  auto x = torch::relu(outs.back()).mean({2, 3});
  result.logits = fc_->forward(dropout_->forward(x));
  return result;
}

std::vector<torch::Tensor> NasNetImpl::regularized_weights() {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) {
    if (p.dim() >= 2) out.push_back(p);
  }
  return out;
}

std::shared_ptr<ClassifierImpl> nasnet(const ModelOptions& options, const std::string& name) {
  return std::make_shared<NasNetImpl>(options, nasnet_config(name));
}

}  // namespace fastnn::models
