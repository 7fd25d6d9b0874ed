// NASNet-A as defined by TF-slim (research/slim/nets/nasnet/nasnet.py and
// nasnet_utils.py), after Zoph et al., "Learning Transferable Architectures
// for Scalable Image Recognition" (arXiv:1707.07012). Variants (hparams):
// nasnet_cifar (32: 18 cells, 32 filters, stem x3), nasnet_mobile (224: 12
// cells, 44 filters, stem x1), nasnet_large (331: 18 cells, 168 filters,
// stem x3, skip_reduction_layer_input).
//
// Scope layout (TF-slim uses no outer scope): stem l1_stem_3x3 +
// l1_stem_bn (cifar) or conv0 (3x3 /2 VALID) + conv0_bn and reduction cells
// cell_stem_0, cell_stem_1 (ImageNet); normal cells cell_<i>, with
// reduction_cell_0/1 before cells num_cells/3 and 2*num_cells/3. A cell
// holds prev_1x1 + prev_bn or path1_conv, path2_conv, final_path_bn (when
// the previous state must be matched), 1x1 + beginning_bn,
// comb_iter_<0..4>/{left,right}/{separable_KxK_<1,2>, bn_sep_KxK_<1,2>,
// 1x1, bn_1} and cell_output/reduction_<i>/{path_conv,path_bn,...}. Aux
// head (training only) aux_<cell>/aux_logits/{proj, aux_bn0, Conv (kernel
// = the pooled map), aux_bn1, FC}; logits final_layer/FC.
//
// arg_scope: conv2d and separable_conv2d without biases or activation,
// batch_norm with scale (cifar: decay 0.9, eps 1e-5; ImageNet: 0.9997,
// 1e-3); variance_scaling_initializer(mode=FAN_OUT) for conv, separable and
// fc weights; L2 on all of them (depthwise and pointwise included).
#pragma once

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

/// TF-slim's NASNet hparams (cifar_config, mobile_imagenet_config,
/// large_imagenet_config) plus the arg_scope's batch norm.
struct NasNetConfig {
  bool imagenet_stem = true;
  double stem_multiplier = 3.0;
  int64_t num_cells = 18;
  int64_t num_conv_filters = 168;
  double filter_scaling_rate = 2.0;
  int64_t num_reduction_layers = 2;
  bool skip_reduction_layer_input = true;
  bool use_aux_head = true;
  double drop_path_keep_prob = 0.7;
  /// Steps over which drop path ramps from off to drop_path_keep_prob.
  int64_t total_training_steps = 250000;
  BatchNormOptions bn;
  int64_t default_image_size = 331;
};

/// The hparams of "nasnet_cifar", "nasnet_mobile" or "nasnet_large".
NasNetConfig nasnet_config(const std::string& name);

class NasNetCellImpl;

/// A NASNet-A network. Built for one image size (ModelOptions.image_size,
/// 0 = the default): the aux head's kernel and the cells' reductions
/// depend on it, and forward() rejects other sizes.
class NasNetImpl : public ClassifierImpl {
 public:
  NasNetImpl(const ModelOptions& options, const NasNetConfig& config);
  /// aux_logits only in training mode (TF-slim builds the aux head only
  /// when is_training), and only with use_aux_head.
  ModelOutput forward(torch::Tensor images) override;
  /// Conv, separable (depthwise and pointwise) and fc weights.
  std::vector<torch::Tensor> regularized_weights() override;
  /// The global step for drop path's schedule: keep probability falls
  /// linearly from 1 at step 0 to the cell's target at
  /// total_training_steps. Default 0 (drop path off).
  void set_global_step(int64_t step) override { global_step_ = step; }

 private:
  struct Step {
    std::shared_ptr<NasNetCellImpl> cell;
    int64_t prev = -1;  // index into the cell outputs; -1: none
  };
  NasNetConfig config_;
  int64_t image_size_;
  int64_t global_step_ = 0;
  std::shared_ptr<torch::nn::Module> stem_conv_;
  TfBatchNorm stem_bn_{nullptr};
  std::vector<Step> steps_;
  int64_t aux_after_ = -1;  // step whose output feeds the aux head
  std::shared_ptr<torch::nn::Module> aux_proj_, aux_conv_;
  TfBatchNorm aux_bn0_{nullptr}, aux_bn1_{nullptr};
  torch::nn::Linear aux_fc_{nullptr}, fc_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};

/// A NASNet variant by TF-slim name: "nasnet_cifar", "nasnet_mobile",
/// "nasnet_large".
std::shared_ptr<ClassifierImpl> nasnet(const ModelOptions& options, const std::string& name);

}  // namespace fastnn::models
