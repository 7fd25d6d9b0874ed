#include "src/train/inference_model.h"

#include <torch/torch.h>

#include "fastnn/errors.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"

namespace fastnn::train {
namespace {

// The checkpoint's number of classes: build the network with a class count
// no layer has by chance, and read the checkpoint's size of each variable
// that has it (the logits, and the aux logits).
int64_t classes_in_checkpoint(const models::ModelSpec& spec, models::ModelOptions o,
                              const TensorMap& ckpt, const std::string& path) {
  constexpr int64_t kProbe = 9973;
  o.num_classes = kProbe;
  auto probe = spec.create(o);
  for (const auto& v : models::model_variables(*probe)) {
    if (v.tensor.dim() == 0 || v.tensor.size(0) != kProbe) continue;
    auto it = ckpt.find(model_key(v.name));
    if (it != ckpt.end() && it->second.dim() > 0) return it->second.size(0);
  }
  throw ConfigError("num_classes: not set, and '" + path + "' has no logits variable of " +
                    spec.name + " to take it from");
}

}  // namespace

InferenceModel load_inference_model(const HParams& hp, int64_t image_size) {
  if (hp.checkpoint_path.empty()) {
    throw ConfigError("checkpoint_path: not set (a checkpoint, this project's or TensorFlow's)");
  }
  InferenceModel m;
  m.spec = &models::find_model(hp.model_name);
  models::ModelOptions& o = m.options;
  o.in_channels = hp.use_grayscale ? 1 : 3;
  o.image_size =
      image_size > 0 ? image_size : hp.eval_image_size.value_or(m.spec->default_image_size);
  o.dropout_keep_prob = 1.0;
  m.checkpoint = resolve_checkpoint(hp.checkpoint_path);
  const TensorMap ckpt = load_tensors(m.checkpoint);
  o.num_classes =
      hp.num_classes ? *hp.num_classes : classes_in_checkpoint(*m.spec, o, ckpt, m.checkpoint);
  m.model = m.spec->create(o);
  RestoreOptions ro;
  for (const auto& [key, t] : ckpt) {
    if (key.find("/ExponentialMovingAverage") != std::string::npos) ro.use_moving_averages = true;
  }
  restore_model(*m.model, ckpt, m.checkpoint, ro);
  m.moving_averages = ro.use_moving_averages;
  m.model->eval();
  return m;
}

}  // namespace fastnn::train
