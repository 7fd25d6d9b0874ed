// A trained network restored for inference, as eval_image_classifier reads
// it: eval mode, dropout off, the checkpoint's moving averages as
// moving_average_decay says (MovingAverages). Shared by classify_image and export_inference_graph.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "models/model_factory.h"
#include "src/train/moving_averages.h"

namespace fastnn::train {

/// Which network to restore, from where.
struct InferenceOptions {
  /// A name of the model factory.
  std::string model_name;
  /// A checkpoint file, a TF prefix or a train_dir (resolve_checkpoint).
  std::string checkpoint_path;
  /// Classes of the logits; unset: the checkpoint's logits size.
  std::optional<int64_t> num_classes;
  /// The image size (eval_image_size); unset: the network's default.
  std::optional<int64_t> image_size;
  /// 1-channel images (else 1 only when the checkpoint reads 1 channel).
  bool use_grayscale = false;
  /// Which weights are restored (moving_average_decay).
  MovingAverages moving_averages = MovingAverages::kAuto;
};

struct InferenceModel {
  std::shared_ptr<models::ClassifierImpl> model;
  /// What it was built with (num_classes, in_channels, image_size).
  models::ModelOptions options;
  /// The model factory's row for the model_name.
  const models::ModelSpec* spec = nullptr;
  /// The checkpoint file (or TF prefix) actually read.
  std::string checkpoint;
  /// The "/ExponentialMovingAverage" shadows were restored.
  bool moving_averages = false;
};

/// ConfigError "KEY: SIZE: MODEL takes DxD images only" for a network of one
/// size (spec.fixed_image_size, lenet) given another.
void check_fixed_image_size(const models::ModelSpec& spec, int64_t size, const std::string& key);

/// Refuses an image size `model` cannot take, before any work: ConfigError
/// "KEY: SIZE: MODEL takes DxD images only" for a network of one size
/// (lenet), else "KEY: SIZE: MODEL cannot take SIZExSIZE images (REASON)"
/// when a forward pass of one zero image fails in LibTorch (layers whose
/// shapes do not fit: a fully-connected layer after too small a map).
void check_image_size(models::ClassifierImpl& model, const models::ModelSpec& spec,
                      int64_t channels, int64_t size, const std::string& key);

/// options.model_name restored from options.checkpoint_path (ours or
/// TensorFlow's, resolve_checkpoint). num_classes: options.num_classes, else
/// the checkpoint's logits size; image_size: `image_size` when > 0, else
/// options.image_size, else the network's default; 1 channel when
/// options.use_grayscale or when the checkpoint's first convolution reads 1
/// channel (an MNIST network). Throws ConfigError (no checkpoint_path,
/// unknown network, variables that do not fit, an image size the network
/// cannot take: check_image_size) or DataError (no checkpoint,
/// bad bytes).
InferenceModel load_inference_model(const InferenceOptions& options, int64_t image_size = 0);

/// options.model_name with its initial weights (drawn after seeding
/// LibTorch with `seed`), for a graph without a checkpoint, as TF-slim's
/// export_inference_graph writes one. REQUIRES: options.num_classes (a
/// ConfigError names it otherwise); image_size as load_inference_model's.
InferenceModel initial_inference_model(const InferenceOptions& options, int64_t image_size,
                                       int64_t seed);

}  // namespace fastnn::train
