// A trained network restored for inference, as eval_image_classifier reads
// it: eval mode, dropout off, the checkpoint's moving averages when it has
// them. Shared by classify_image and export_inference_graph.
#pragma once

#include <memory>
#include <string>

#include "fastnn/hparams.h"
#include "models/model_factory.h"

namespace fastnn::train {

struct InferenceModel {
  std::shared_ptr<models::ClassifierImpl> model;
  /// What it was built with (num_classes, in_channels, image_size).
  models::ModelOptions options;
  /// The model factory's row for hp.model_name.
  const models::ModelSpec* spec = nullptr;
  /// The checkpoint file (or TF prefix) actually read.
  std::string checkpoint;
  /// The "/ExponentialMovingAverage" shadows were restored.
  bool moving_averages = false;
};

/// hp.model_name restored from hp.checkpoint_path (ours or TensorFlow's,
/// resolve_checkpoint). num_classes: hp.num_classes, else the checkpoint's
/// logits size; image_size: `image_size` when > 0, else hp.eval_image_size,
/// else the network's default; 1 channel when hp.use_grayscale or when the
/// checkpoint's first convolution reads 1 channel (an MNIST network). Throws
/// ConfigError (no checkpoint_path, unknown network, variables that do not
/// fit) or DataError (no checkpoint, bad bytes).
InferenceModel load_inference_model(const HParams& hp, int64_t image_size = 0);

}  // namespace fastnn::train
