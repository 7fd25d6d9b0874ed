#include "src/train/inference_model.h"

#include <torch/torch.h>

#include "fastnn/errors.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"

namespace fastnn::train {
namespace {

// What the checkpoint says of the network: its number of classes (the
// size of each variable that has the class count, in a network built with
// a count no layer has by chance: the logits, the aux logits) and whether
// it takes 1-channel images (a convolution that reads the 3 input channels
// reads 1 in the checkpoint).
struct CheckpointShape {
  int64_t classes = 0;
  bool grayscale = false;
};

CheckpointShape shape_in_checkpoint(const models::ModelSpec& spec, models::ModelOptions o,
                                    const TensorMap& ckpt) {
  constexpr int64_t kProbe = 9973;
  o.num_classes = kProbe;
  o.in_channels = 3;
  auto probe = spec.create(o);
  CheckpointShape r;
  for (const auto& v : models::model_variables(*probe)) {
    auto it = ckpt.find(model_key(v.name));
    if (it == ckpt.end() || it->second.dim() != v.tensor.dim() || v.tensor.dim() == 0) continue;
    if (v.tensor.size(0) == kProbe && r.classes == 0) r.classes = it->second.size(0);
    if (v.tensor.dim() == 4 && v.tensor.size(1) == 3 && it->second.size(1) == 1) {
      r.grayscale = true;
    }
  }
  return r;
}

}  // namespace

void check_fixed_image_size(const models::ModelSpec& spec, int64_t size, const std::string& key) {
  if (spec.fixed_image_size && size != spec.default_image_size) {
    throw ConfigError(key + ": " + std::to_string(size) + ": " + spec.name + " takes " +
                      std::to_string(spec.default_image_size) + "x" +
                      std::to_string(spec.default_image_size) + " images only");
  }
}

void check_image_size(models::ClassifierImpl& model, const models::ModelSpec& spec,
                      int64_t channels, int64_t size, const std::string& key) {
  check_fixed_image_size(spec, size, key);
  const std::string what = key + ": " + std::to_string(size) + ": " + spec.name;
  const bool training = model.is_training();
  model.eval();
  try {
    torch::NoGradGuard no_grad;
    const auto device = model.parameters().empty() ? torch::Device(torch::kCPU)
                                                   : model.parameters().front().device();
    model.forward(torch::zeros({1, channels, size, size}, torch::TensorOptions().device(device)));
  } catch (const c10::Error& e) {
    model.train(training);
    std::string reason = e.what_without_backtrace();
    reason = reason.substr(0, reason.find('\n'));
    throw ConfigError(what + " cannot take " + std::to_string(size) + "x" + std::to_string(size) +
                      " images (" + reason.substr(0, 200) + ")");
  }
  model.train(training);
}

InferenceModel load_inference_model(const InferenceOptions& options, int64_t image_size) {
  if (options.checkpoint_path.empty()) {
    throw ConfigError("checkpoint_path: not set (a checkpoint, this project's or TensorFlow's)");
  }
  InferenceModel loaded;
  loaded.spec = &models::find_model(options.model_name);
  models::ModelOptions& model_options = loaded.options;
  model_options.image_size =
      image_size > 0 ? image_size : options.image_size.value_or(loaded.spec->default_image_size);
  model_options.dropout_keep_prob = 1.0;
  loaded.checkpoint = resolve_checkpoint(options.checkpoint_path);
  const TensorMap ckpt = load_tensors(loaded.checkpoint);
  const CheckpointShape found = shape_in_checkpoint(*loaded.spec, model_options, ckpt);
  model_options.in_channels = options.use_grayscale || found.grayscale ? 1 : 3;
  if (options.num_classes) {
    model_options.num_classes = *options.num_classes;
  } else if (found.classes > 0) {
    model_options.num_classes = found.classes;
  } else {
    throw ConfigError("num_classes: not set, and '" + loaded.checkpoint +
                      "' has no logits variable of " + loaded.spec->name + " to take it from");
  }
  loaded.model = loaded.spec->create(model_options);
  RestoreOptions restore;
  restore.use_moving_averages =
      use_moving_averages(*loaded.model, ckpt, loaded.checkpoint, options.moving_averages);
  restore_model(*loaded.model, ckpt, loaded.checkpoint, restore);
  loaded.moving_averages = restore.use_moving_averages;
  check_image_size(*loaded.model, *loaded.spec, model_options.in_channels, model_options.image_size,
                   image_size > 0 ? "image_size" : "eval_image_size");
  loaded.model->eval();
  return loaded;
}

InferenceModel initial_inference_model(const InferenceOptions& options, int64_t image_size,
                                       int64_t seed) {
  if (!options.num_classes) {
    throw ConfigError(
        "num_classes: not set, and without a checkpoint_path nothing else says the network's "
        "classes (give --num_classes, or a checkpoint)");
  }
  InferenceModel made;
  made.spec = &models::find_model(options.model_name);
  models::ModelOptions& o = made.options;
  o.image_size =
      image_size > 0 ? image_size : options.image_size.value_or(made.spec->default_image_size);
  o.dropout_keep_prob = 1.0;
  o.num_classes = *options.num_classes;
  o.in_channels = options.use_grayscale ? 1 : 3;
  torch::manual_seed(static_cast<uint64_t>(seed));
  made.model = made.spec->create(o);
  check_image_size(*made.model, *made.spec, o.in_channels, o.image_size,
                   image_size > 0 ? "image_size" : "eval_image_size");
  made.model->eval();
  return made;
}

}  // namespace fastnn::train
