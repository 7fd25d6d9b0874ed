// Base class of every image classifier in the model zoo, and the helpers
// that give parameters their TF-slim variable names.
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace fastnn::models {

/// What a forward pass returns; `aux_logits` is undefined for networks
/// without an auxiliary head.
struct ModelOutput {
  torch::Tensor logits;
  torch::Tensor aux_logits;
};

/// Options common to every network. REQUIRES: num_classes >= 1.
struct ModelOptions {
  int64_t num_classes = 1000;
  /// Channels of the input images (1 for MNIST-style data, 3 for RGB).
  int64_t in_channels = 3;
  /// TF-slim's dropout_keep_prob; 1.0 disables dropout.
  double dropout_keep_prob = 0.5;
  /// Side of the square input; 0 = the network's default_image_size.
  int64_t image_size = 0;
  /// The project's CPU kernels where a block has their pattern
  /// (models/conv_blocks.h); false: LibTorch's operators only.
  bool fused_kernels = true;
};

/// A network built from TF-slim's definition. Images are NCHW float.
class ClassifierImpl : public torch::nn::Module {
 public:
  explicit ClassifierImpl(std::string scope) : scope_(std::move(scope)) {}

  virtual ModelOutput forward(torch::Tensor images) = 0;

  /// TF-slim's outer variable scope, e.g. "LeNet".
  const std::string& scope() const { return scope_; }

  /// The global step before each training step, for networks whose
  /// training depends on it (NASNet's drop-path schedule). Default: unused.
  virtual void set_global_step(int64_t) {}

  /// Weights covered by the arg_scope's L2 regularizer. Default: every
  /// conv and fully-connected weight (rank >= 2).
  virtual std::vector<torch::Tensor> regularized_weights();

 private:
  std::string scope_;
};

/// A named model variable: TF-slim name (e.g. "LeNet/conv1/weights") and
/// the tensor. Buffers (BatchNorm statistics) are included.
struct NamedVariable {
  std::string name;
  torch::Tensor tensor;
  bool trainable = true;
};

/// Every parameter and buffer of `model` under its TF-slim name, in a
/// stable order.
std::vector<NamedVariable> model_variables(ClassifierImpl& model);

/// The TF-slim name of a LibTorch parameter path inside `scope`:
/// "conv1.weight" -> "<scope>/conv1/weights".
std::string tf_variable_name(const std::string& scope, const std::string& torch_name);

/// TF's truncated normal: N(0, stddev) re-drawn outside two stddevs.
void truncated_normal_(torch::Tensor t, double stddev);

}  // namespace fastnn::models
