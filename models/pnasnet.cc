#include "models/pnasnet.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace fastnn::models {

PnasnetConfig pnasnet_large_config() { return {}; }

PnasnetConfig pnasnet_mobile_config() {
  PnasnetConfig c;
  c.stem_multiplier = 1.0;
  c.num_cells = 9;
  c.num_conv_filters = 54;
  c.drop_path_keep_prob = 1.0;
  c.default_image_size = 224;
  return c;
}

/// slim.separable_conv2d (depth_multiplier 1, SAME, no bias): a depthwise
/// k x k conv carrying the stride, then a pointwise 1x1.
class PnasSeparableConvImpl : public torch::nn::Module {
 public:
  PnasSeparableConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t stride_;
  torch::Tensor depthwise_, pointwise_;
};
TORCH_MODULE(PnasSeparableConv);

class PnasConvImpl : public torch::nn::Module {
 public:
  PnasConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
               Padding padding = Padding::kSame);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t stride_;
  Padding padding_;
  torch::Tensor weight_;
};
TORCH_MODULE(PnasConv);

namespace {

// variance_scaling_initializer(factor=2.0, mode='FAN_OUT'), truncated normal.
// TF's fan-out of [kh, kw, in, out] is kh * kw * out; a depthwise filter
// [kh, kw, in, 1] has kh * kw.
torch::Tensor fan_out_weight(std::vector<int64_t> shape, bool depthwise) {
  auto w = torch::empty(shape);
  const int64_t receptive = w.dim() > 2 ? w[0][0].numel() : 1;
  const int64_t fan_out = (depthwise ? 1 : w.size(0)) * receptive;
  truncated_normal_(w, std::sqrt(1.3 * 2.0 / static_cast<double>(fan_out)));
  return w;
}

// A convolution with TF's SAME padding (asymmetric when TF's is).
torch::Tensor conv_same(torch::Tensor x, const torch::Tensor& w, int64_t stride, int64_t groups) {
  const int64_t k = w.size(2);
  auto [top, bottom] = same_padding(x.size(2), k, stride);
  auto [left, right] = same_padding(x.size(3), k, stride);
  if (top != bottom || left != right) {
    x = torch::constant_pad_nd(x, {left, right, top, bottom});
    top = left = 0;
  }
  return torch::conv2d(x, w, {}, stride, {top, left}, 1, groups);
}

BatchNormOptions nasnet_bn() {
  BatchNormOptions o;  // decay 0.9997, epsilon 1e-3
  o.scale = true;
  return o;
}

TfBatchNorm batch_norm(int64_t channels) { return TfBatchNorm(channels, nasnet_bn()); }

torch::nn::Linear fully_connected(int64_t in, int64_t out) {
  torch::nn::Linear fc(in, out);
  torch::NoGradGuard no_grad;
  fc->weight.copy_(fan_out_weight({out, in}, false));
  fc->bias.zero_();
  return fc;
}

// TF-slim's operation strings, e.g. 'separable_5x5_2' or 'max_pool_3x3'.
struct OpSpec {
  enum Kind { kSeparable, kMaxPool, kNone };
  Kind kind;
  int64_t kernel;
};

// PNasNetNormalCell: (left, right) operations and hidden-state indices of
// the five blocks; states 0 and 1 are the cell's and the previous cell's
// inputs, block b adds state b + 2. Only blocks' states are concatenated.
constexpr OpSpec kSep5{OpSpec::kSeparable, 5}, kSep7{OpSpec::kSeparable, 7},
    kSep3{OpSpec::kSeparable, 3}, kMax3{OpSpec::kMaxPool, 3}, kNone{OpSpec::kNone, 1};
constexpr OpSpec kOperations[10] = {kSep5, kMax3, kSep7, kMax3, kSep5,
                                    kSep3, kSep3, kMax3, kSep3, kNone};
constexpr int kHiddenStateIndices[10] = {1, 1, 0, 0, 0, 0, 4, 0, 1, 0};
constexpr int kBlocks = 5;

// One left/right operation (nasnet_utils' _apply_conv_operation, minus the
// drop path that the cell applies).
class PnasOpImpl : public torch::nn::Module {
 public:
  PnasOpImpl(OpSpec spec, int64_t in, int64_t filters, int64_t stride)
      : spec_(spec), stride_(stride) {
    const std::string k = std::to_string(spec.kernel);
    const std::string kxk = k + "x" + k;
    if (spec.kind == OpSpec::kSeparable) {
      sep1_ = register_module("separable_" + kxk + "_1",
                              PnasSeparableConv(in, filters, spec.kernel, stride));
      bn1_ = register_module("bn_sep_" + kxk + "_1", batch_norm(filters));
      sep2_ = register_module("separable_" + kxk + "_2",
                              PnasSeparableConv(filters, filters, spec.kernel, 1));
      bn2_ = register_module("bn_sep_" + kxk + "_2", batch_norm(filters));
      return;
    }
    const bool project =
        spec.kind == OpSpec::kMaxPool ? in != filters : stride > 1 || in != filters;
    if (project) {
      const int64_t s = spec.kind == OpSpec::kNone ? stride : 1;
      conv_ = register_module("1x1", PnasConv(in, filters, 1, s));
      bn1_ = register_module("bn_1", batch_norm(filters));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    switch (spec_.kind) {
      case OpSpec::kSeparable:
        x = bn1_->forward(sep1_->forward(torch::relu(x)));
        return bn2_->forward(sep2_->forward(torch::relu(x)));
      case OpSpec::kMaxPool:
        x = max_pool(x, spec_.kernel, stride_, Padding::kSame);
        return conv_ ? bn1_->forward(conv_->forward(x)) : x;
      case OpSpec::kNone:
        return conv_ ? bn1_->forward(conv_->forward(torch::relu(x))) : x;
    }
    return x;
  }

  bool is_none() const { return spec_.kind == OpSpec::kNone; }

 private:
  OpSpec spec_;
  int64_t stride_;
  PnasSeparableConv sep1_{nullptr}, sep2_{nullptr};
  PnasConv conv_{nullptr};
  TfBatchNorm bn1_{nullptr}, bn2_{nullptr};
};

// comb_iter_<i>: holds left and right.
class CombIterImpl : public torch::nn::Module {
 public:
  CombIterImpl(std::shared_ptr<PnasOpImpl> left, std::shared_ptr<PnasOpImpl> right)
      : left(register_module("left", std::move(left))),
        right(register_module("right", std::move(right))) {}
  std::shared_ptr<PnasOpImpl> left, right;
};

// Drops whole examples with probability 1 - keep, scaling the kept ones.
torch::Tensor drop_path(const torch::Tensor& x, double keep) {
  auto mask = torch::floor(keep + torch::rand({x.size(0), 1, 1, 1}, x.options()));
  return x / keep * mask;
}

}  // namespace

PnasSeparableConvImpl::PnasSeparableConvImpl(int64_t in, int64_t out, int64_t kernel,
                                             int64_t stride)
    : stride_(stride) {
  depthwise_ =
      register_parameter("depthwise_weights", fan_out_weight({in, 1, kernel, kernel}, true));
  pointwise_ = register_parameter("pointwise_weights", fan_out_weight({out, in, 1, 1}, false));
}

torch::Tensor PnasSeparableConvImpl::forward(const torch::Tensor& x) {
  auto y = conv_same(x, depthwise_, stride_, depthwise_.size(0));
  return torch::conv2d(y, pointwise_);
}

PnasConvImpl::PnasConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, Padding padding)
    : stride_(stride), padding_(padding) {
  weight_ = register_parameter("weight", fan_out_weight({out, in, kernel, kernel}, false));
}

torch::Tensor PnasConvImpl::forward(const torch::Tensor& x) {
  if (padding_ == Padding::kValid) return torch::conv2d(x, weight_, {}, stride_);
  return conv_same(x, weight_, stride_, 1);
}

/// Shapes fixing one cell's layers. prev_channels 0: no previous layer
/// (the first stem cell), which TF-slim replaces by the cell's input.
struct PnasCellShape {
  int64_t in_channels, in_size;
  int64_t prev_channels, prev_size;
  int64_t filters;
  int64_t stride;
};

class PnasCellImpl : public torch::nn::Module {
 public:
  PnasCellImpl(PnasCellShape shape, double drop_path_keep_prob)
      : drop_path_keep_prob_(drop_path_keep_prob) {
    // The first stem cell has no previous layer: TF-slim's
    // _reduce_prev_layer hands back the cell's input as it is, whatever
    // its channel count (no prev_1x1 projection).
    const bool first = shape.prev_channels == 0;
    if (first) {
      shape.prev_channels = shape.in_channels;
      shape.prev_size = shape.in_size;
    }
    const int64_t filters = shape.filters;
    int64_t prev_out = shape.prev_channels;
    if (first) {
      // prev is x itself.
    } else if (shape.prev_size != shape.in_size) {  // factorized_reduction, stride 2
      // An odd filter count gives path2 the extra channel (TF-slim's
      // int(f / 2) + f % 2).
      path1_ = register_module("path1_conv", PnasConv(shape.prev_channels, filters / 2, 1));
      path2_ = register_module("path2_conv",
                               PnasConv(shape.prev_channels, filters / 2 + filters % 2, 1));
      prev_bn_ = register_module("final_path_bn", batch_norm(filters));
      prev_out = filters;
    } else if (shape.prev_channels != filters) {
      prev_1x1_ = register_module("prev_1x1", PnasConv(shape.prev_channels, filters, 1));
      prev_bn_ = register_module("prev_bn", batch_norm(filters));
      prev_out = filters;
    }
    conv_ = register_module("1x1", PnasConv(shape.in_channels, filters, 1));
    bn_ = register_module("beginning_bn", batch_norm(filters));
    std::vector<int64_t> channels = {filters, prev_out};
    for (int block = 0; block < kBlocks; ++block) {
      std::shared_ptr<PnasOpImpl> ops[2];
      for (int side = 0; side < 2; ++side) {
        const int idx = kHiddenStateIndices[2 * block + side];
        ops[side] = std::make_shared<PnasOpImpl>(kOperations[2 * block + side], channels[idx],
                                                 filters, idx < 2 ? shape.stride : 1);
      }
      combs_.push_back(register_module("comb_iter_" + std::to_string(block),
                                       std::make_shared<CombIterImpl>(ops[0], ops[1])));
      channels.push_back(filters);
    }
  }

  /// `prev` undefined: the first stem cell.
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor prev, double drop_path_progress) {
    if (!prev.defined()) prev = x;
    if (path1_) {
      auto p = torch::relu(prev);
      using torch::indexing::Slice;
      auto shifted =
          torch::constant_pad_nd(p, {0, 1, 0, 1}).index({Slice(), Slice(), Slice(1), Slice(1)});
      auto stride2 = [](const torch::Tensor& t) {
        return t.index({Slice(), Slice(), Slice(0, {}, 2), Slice(0, {}, 2)});
      };
      prev = prev_bn_->forward(
          torch::cat({path1_->forward(stride2(p)), path2_->forward(stride2(shifted))}, 1));
    } else if (prev_1x1_) {
      prev = prev_bn_->forward(prev_1x1_->forward(torch::relu(prev)));
    }
    std::vector<torch::Tensor> states = {bn_->forward(conv_->forward(torch::relu(x))), prev};
    const double keep = 1.0 - drop_path_progress * (1.0 - drop_path_keep_prob_);
    auto apply = [&](PnasOpImpl& op, const torch::Tensor& h) {
      auto y = op.forward(h);
      if (!op.is_none() && is_training() && keep < 1.0) y = drop_path(y, keep);
      return y;
    };
    for (int b = 0; b < kBlocks; ++b) {
      states.push_back(apply(*combs_[b]->left, states[kHiddenStateIndices[2 * b]]) +
                       apply(*combs_[b]->right, states[kHiddenStateIndices[2 * b + 1]]));
    }
    return torch::cat(std::vector<torch::Tensor>(states.begin() + 2, states.end()), 1);
  }

 private:
  double drop_path_keep_prob_;  // Scaled by the cell's depth.
  PnasConv path1_{nullptr}, path2_{nullptr}, prev_1x1_{nullptr};
  PnasConv conv_{nullptr};
  TfBatchNorm prev_bn_{nullptr}, bn_{nullptr};
  std::vector<std::shared_ptr<CombIterImpl>> combs_;
};

PnasnetImpl::PnasnetImpl(const ModelOptions& options, const PnasnetConfig& config)
    : ClassifierImpl(""),
      dropout_keep_prob_(options.dropout_keep_prob),
      total_training_steps_(config.total_training_steps),
      image_size_(options.image_size > 0 ? options.image_size : config.default_image_size) {
  TORCH_CHECK(image_size_ >= 3, "image_size: pnasnet needs at least 3, got ", image_size_);
  const auto stem_filters = static_cast<int64_t>(32 * config.stem_multiplier);
  conv0_ =
      register_module("conv0", PnasConv(options.in_channels, stem_filters, 3, 2, Padding::kValid));
  conv0_bn_ = register_module("conv0_bn", batch_norm(stem_filters));

  // (channels, side) of the last two cell outputs; channels 0 = none.
  std::pair<int64_t, int64_t> prev = {0, 0};
  std::pair<int64_t, int64_t> cur = {stem_filters, (image_size_ - 3) / 2 + 1};
  const int64_t total_cells = config.num_cells + 2;  // Stem cells included.
  auto add_cell = [&](const std::string& name, double scaling, int64_t stride) {
    const auto filters = static_cast<int64_t>(config.num_conv_filters * scaling);
    const int64_t cell_num = static_cast<int64_t>(cells_.size());
    const double layer_ratio = static_cast<double>(cell_num + 1) / total_cells;
    auto cell = std::make_shared<PnasCellImpl>(
        PnasCellShape{cur.first, cur.second, prev.first, prev.second, filters, stride},
        1.0 - layer_ratio * (1.0 - config.drop_path_keep_prob));
    cells_.push_back(register_module(name, cell));
    prev = cur;
    cur = {kBlocks * filters, (cur.second + stride - 1) / stride};
  };
  add_cell("cell_stem_0", 0.25, 2);
  add_cell("cell_stem_1", 0.5, 2);

  // calc_reduction_layers(num_cells, 2): int(k / 3 * num_cells), k = 1, 2.
  std::vector<int64_t> reductions;
  for (int k = 1; k <= 2; ++k) {
    reductions.push_back(static_cast<int64_t>(static_cast<double>(k) / 3 * config.num_cells));
  }
  double scaling = 1.0;
  int64_t aux_channels = 0, aux_size = 0;
  for (int64_t i = 0; i < config.num_cells; ++i) {
    const bool reduce = i == reductions[0] || i == reductions[1];
    if (reduce) scaling *= 2.0;
    add_cell("cell_" + std::to_string(i), scaling, reduce ? 2 : 1);
    if (i == reductions[1] - 1) {
      aux_tap_ = cells_.size() - 1;
      std::tie(aux_channels, aux_size) = cur;
    }
  }
  TORCH_CHECK(aux_size >= 5, "image_size: pnasnet needs images of at least ",
              "67x67 (its aux head pools a 5x5 window), got ", image_size_);

  aux_ =
      register_module("aux_" + std::to_string(aux_tap_ - 2), std::make_shared<torch::nn::Module>());
  auto aux_logits = aux_->register_module("aux_logits", std::make_shared<torch::nn::Module>());
  const int64_t pooled = (aux_size - 5) / 3 + 1;
  aux_proj_ = aux_logits->register_module("proj", PnasConv(aux_channels, 128, 1));
  aux_bn0_ = aux_logits->register_module("aux_bn0", batch_norm(128));
  aux_conv_ = aux_logits->register_module("Conv", PnasConv(128, 768, pooled, 1, Padding::kValid));
  aux_bn1_ = aux_logits->register_module("aux_bn1", batch_norm(768));
  aux_fc_ = aux_logits->register_module("FC", fully_connected(768, options.num_classes));

  auto final_layer = register_module("final_layer", std::make_shared<torch::nn::Module>());
  fc_ = final_layer->register_module("FC", fully_connected(cur.first, options.num_classes));
}

void PnasnetImpl::set_global_step(int64_t step) {
  drop_path_progress_ =
      std::min(1.0, static_cast<double>(step) / static_cast<double>(total_training_steps_));
}

std::vector<torch::Tensor> PnasnetImpl::regularized_weights() {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) {
    if (p.dim() >= 2) out.push_back(p);
  }
  return out;
}

ModelOutput PnasnetImpl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(2) == image_size_ && x.size(3) == image_size_,
              "pnasnet was built for ", image_size_, "x", image_size_,
              " images (ModelOptions.image_size), got ", x.sizes());
  x = conv0_bn_->forward(conv0_->forward(x));
  torch::Tensor prev, aux;
  for (size_t i = 0; i < cells_.size(); ++i) {
    auto next = cells_[i]->forward(x, prev, drop_path_progress_);
    prev = x;
    x = next;
    if (i == aux_tap_ && is_training()) {
      auto a = avg_pool(torch::relu(x), 5, 3, Padding::kValid);
      a = torch::relu(aux_bn0_->forward(aux_proj_->forward(a)));
      a = torch::relu(aux_bn1_->forward(aux_conv_->forward(a)));
      aux = aux_fc_->forward(a.flatten(1));
    }
  }
  x = torch::relu(x).mean({2, 3});
  x = torch::dropout(x, 1.0 - dropout_keep_prob_, is_training());
  return {fc_->forward(x), aux};
}

std::shared_ptr<ClassifierImpl> make_pnasnet_large(const ModelOptions& o) {
  return std::make_shared<PnasnetImpl>(o, pnasnet_large_config());
}

std::shared_ptr<ClassifierImpl> make_pnasnet_mobile(const ModelOptions& o) {
  return std::make_shared<PnasnetImpl>(o, pnasnet_mobile_config());
}

}  // namespace fastnn::models
