#include "src/train/train_state.h"

#include <torch/torch.h>

#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/compat/torch_compat.h"
#include "src/train/loss.h"
#include "src/train/rng_state.h"

namespace fastnn::train {

std::string model_key(const std::string& tf_name) {
  return "model/" + tf_name;
}

std::string ema_key(const std::string& tf_name) {
  return model_key(tf_name) + "/ExponentialMovingAverage";
}

int restore_model(models::ClassifierImpl& model, const TensorMap& ckpt,
                  const std::string& path, const RestoreOptions& options) {
  std::string problems;
  int restored = 0;
  torch::NoGradGuard no_grad;
  const auto excluded = split_list(options.exclude_scopes);
  for (auto& v : models::model_variables(model)) {
    bool skip = false;
    for (const auto& scope : excluded) {
      if (v.name.rfind(scope, 0) == 0) skip = true;
    }
    if (skip) continue;
    auto it = ckpt.end();
    if (options.use_moving_averages) it = ckpt.find(ema_key(v.name));
    if (it == ckpt.end()) it = ckpt.find(model_key(v.name));
    if (it == ckpt.end()) {
      if (!options.ignore_missing) problems += "\n  missing: " + v.name;
    } else if (it->second.sizes() != v.tensor.sizes()) {
      std::ostringstream os;
      os << "\n  shape mismatch: " << v.name << " is " << v.tensor.sizes()
         << " in the model, " << it->second.sizes() << " in the checkpoint";
      problems += os.str();
    } else {
      v.tensor.copy_(it->second);
      ++restored;
    }
  }
  if (!problems.empty()) {
    throw ConfigError("checkpoint '" + path + "' does not match the model:" + problems +
                      "\n(checkpoint_exclude_scopes leaves variables out, e.g. "
                      "the logits when num_classes differs; ignore_missing_vars "
                      "skips missing ones)");
  }
  return restored;
}

TrainState::TrainState(models::ClassifierImpl& model, optim::Optimizer& optimizer,
                       LossScaler& scaler, std::optional<double> moving_average_decay)
    : model_(model),
      optimizer_(optimizer),
      scaler_(scaler),
      moving_average_decay_(moving_average_decay) {
  if (!moving_average_decay_) return;
  for (const auto& v : models::model_variables(model_)) {
    ema_.push_back({v, v.tensor.detach().clone()});
  }
}

TensorMap TrainState::to_checkpoint() const {
  TensorMap m;
  for (const auto& v : models::model_variables(model_)) m[model_key(v.name)] = v.tensor;
  for (const auto& s : optimizer_.slots()) m["optimizer/" + s.name] = s.value;
  for (const auto& [v, shadow] : ema_) m[ema_key(v.name)] = shadow;
  m["global_step"] = torch::tensor(step, torch::kInt64);
  m["input/batches_consumed"] = torch::tensor(batches_consumed, torch::kInt64);
  m["loss_scale/scale"] = torch::tensor(scaler_.scale(), torch::kFloat64);
  m["loss_scale/good_steps"] = torch::tensor(scaler_.good_steps(), torch::kInt64);
  m["rng/torch_cpu"] = generator_state(torch::Device(torch::kCPU));
  // Dropout on a GPU draws from the device's generator.
  if (device_.is_cuda()) m["rng/torch_cuda"] = generator_state(device_);
  return m;
}

void TrainState::from_checkpoint(const TensorMap& ckpt, const std::string& path) {
  restore_model(model_, ckpt, path);
  std::string missing;
  torch::NoGradGuard no_grad;
  for (auto& s : optimizer_.slots()) {
    auto it = ckpt.find("optimizer/" + s.name);
    if (it == ckpt.end() || it->second.sizes() != s.value.sizes()) {
      missing += "\n  " + s.name;
    } else {
      s.value.copy_(it->second);
    }
  }
  if (!missing.empty()) {
    throw ConfigError("checkpoint '" + path + "' has no " + optimizer_.name() +
                      " slots for (was it written with another optimizer?):" + missing);
  }
  optimizer_.slots_written();
  auto get = [&](const std::string& key) -> int64_t {
    auto it = ckpt.find(key);
    if (it == ckpt.end()) throw DataError("checkpoint '" + path + "' lacks " + key);
    return it->second.item<int64_t>();
  };
  for (auto& [v, shadow] : ema_) {
    auto it = ckpt.find(ema_key(v.name));
    if (it != ckpt.end() && it->second.sizes() == shadow.sizes()) {
      shadow.copy_(it->second);
    } else {
      shadow.copy_(v.tensor);
    }
  }
  step = get("global_step");
  batches_consumed = get("input/batches_consumed");
  auto scale = ckpt.find("loss_scale/scale");
  auto good = ckpt.find("loss_scale/good_steps");
  if (scale != ckpt.end() && good != ckpt.end() && scaler_.dynamic()) {
    scaler_.restore(scale->second.item<double>(), good->second.item<int64_t>());
  }
  auto rng = ckpt.find("rng/torch_cpu");
  if (rng != ckpt.end()) set_generator_state(torch::Device(torch::kCPU), rng->second);
  // Applied when the state is on a GPU (now, or when to() moves it there).
  auto cuda_rng = ckpt.find("rng/torch_cuda");
  cuda_rng_ = cuda_rng != ckpt.end() ? cuda_rng->second : torch::Tensor();
  restore_cuda_rng();
}

void TrainState::restore_cuda_rng() {
  if (!device_.is_cuda() || !cuda_rng_.defined()) return;
  set_generator_state(device_, cuda_rng_);
  cuda_rng_ = torch::Tensor();
}

std::vector<torch::Tensor> TrainState::tensors() const {
  std::vector<torch::Tensor> out;
  for (const auto& v : models::model_variables(model_)) out.push_back(v.tensor);
  for (const auto& s : optimizer_.slots()) out.push_back(s.value);
  for (const auto& [v, shadow] : ema_) out.push_back(shadow);
  return out;
}

void TrainState::broadcast_from_chief(
    const std::function<void(const std::vector<torch::Tensor>&)>& broadcast) {
  std::vector<torch::Tensor> all = tensors();
  auto counters = torch::tensor({step, batches_consumed, scaler_.good_steps()}, torch::kInt64);
  auto loss_scale = torch::tensor({scaler_.scale()}, torch::kFloat64);
  all.push_back(counters);
  all.push_back(loss_scale);
  broadcast(all);
  optimizer_.slots_written();
  step = counters[0].item<int64_t>();
  batches_consumed = counters[1].item<int64_t>();
  if (scaler_.dynamic()) scaler_.restore(loss_scale.item<double>(), counters[2].item<int64_t>());
}

void TrainState::to(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model_.to(device);
  for (auto& s : optimizer_.slots()) s.value.set_data(s.value.to(device));
  for (auto& [v, shadow] : ema_) shadow.set_data(shadow.to(device));
  device_ = device;
  restore_cuda_rng();
}

void TrainState::update_moving_averages() {
  if (ema_.empty()) return;
  const double d = moving_average_decay_at(*moving_average_decay_, step);
  torch::NoGradGuard no_grad;
  if (compat::use_foreach(ema_.front().second.device())) {
    std::vector<torch::Tensor> shadows, values;
    for (auto& [v, shadow] : ema_) {
      shadows.push_back(shadow);
      values.push_back(v.tensor);
    }
    compat::foreach_mul_(shadows, d);
    compat::foreach_add_(shadows, values, 1.0 - d);
    return;
  }
  for (auto& [v, shadow] : ema_) shadow.mul_(d).add_(v.tensor, 1.0 - d);
}

void TrainState::swap_moving_averages() {
  torch::NoGradGuard no_grad;
  for (auto& [v, shadow] : ema_) {
    auto value = v.tensor.detach();
    const auto kept = value.clone();
    value.copy_(shadow);
    shadow.copy_(kept);
  }
}

}  // namespace fastnn::train
