// ResNet v1 and v2 as defined by TF-slim (research/slim/nets/resnet_v1.py,
// resnet_v2.py, resnet_utils.py): He et al., "Deep Residual Learning for
// Image Recognition" (2015) and "Identity Mappings in Deep Residual
// Networks" (2016), bottleneck units, depths 50, 101, 152 and 200. Default
// image size 224; any size works (global average pool before the logits).
//
// Root: conv1 7x7/2 (explicitly padded 3+3, then VALID, as conv2d_same) ->
// pool1 3x3/2 SAME. Four blocks of bottleneck units (base depths 64, 128,
// 256, 512; output 4x that); the stride of a block (2, 2, 2, 1) sits on the
// 3x3 conv2 of its last unit. Units per block: 50: 3,4,6,3; 101: 3,4,23,3;
// 152: 3,8,36,3; 200: 3,24,36,3. Then global average pool and a 1x1 conv
// "logits" (with biases), squeezed to [N, num_classes].
//
// Variables: resnet_v1_50/conv1/{weights,BatchNorm/...},
// resnet_v1_50/block1/unit_1/bottleneck_v1/{shortcut,conv1,conv2,conv3}/...,
// resnet_v1_50/logits/{weights,biases}. v1 puts BatchNorm after every conv
// (none on logits) and a ReLU after the sum. v2 (bottleneck_v2) is
// pre-activation: preact/{beta,gamma,...} BatchNorm+ReLU on the unit input;
// conv1 of the root, shortcut and conv3 have biases and no BatchNorm; a
// final postnorm BatchNorm+ReLU precedes the pool. The shortcut is a 1x1
// conv only where the depth changes (first unit of each block), otherwise
// the input subsampled by the unit's stride. resnet_arg_scope: variance
// scaling (factor 2, fan-in) weights, BatchNorm decay 0.997, epsilon 1e-5,
// scale=true; L2 on conv weights (the logits included).
#pragma once

#include <memory>
#include <vector>

#include "models/classifier.h"
#include "models/layers.h"

namespace fastnn::models {

class ResNetUnitImpl;

/// TF-slim's resnet_v<version>_<depth>.
class ResNetImpl : public ClassifierImpl {
 public:
  /// REQUIRES: version is 1 or 2; depth is 50, 101, 152 or 200.
  ResNetImpl(const ModelOptions& options, int version, int depth);
  ModelOutput forward(torch::Tensor images) override;

 private:
  SlimConv conv1_{nullptr}, logits_{nullptr};
  std::vector<std::shared_ptr<ResNetUnitImpl>> units_;
  TfBatchNorm postnorm_{nullptr};
};

/// model_factory's rows: make_resnet<1, 50> is resnet_v1_50.
template <int kVersion, int kDepth>
std::shared_ptr<ClassifierImpl> make_resnet(const ModelOptions& options) {
  return std::make_shared<ResNetImpl>(options, kVersion, kDepth);
}

}  // namespace fastnn::models
