#include "src/train/train_state.h"

#include <torch/torch.h>

#include <sstream>

#include "fastnn/errors.h"
#include "src/compat/torch_compat.h"
#include "src/config/value_parse.h"
#include "src/log/log.h"
#include "src/train/loss.h"
#include "src/train/rng_state.h"

namespace fastnn::train {

std::string model_key(const std::string& tf_name) { return "model/" + tf_name; }

std::string ema_key(const std::string& tf_name) {
  return model_key(tf_name) + "/ExponentialMovingAverage";
}

namespace {

// TensorFlow's name of a non-floating type ("int32", "bool", "complex64").
std::string type_name(torch::ScalarType t) {
  switch (t) {
    case torch::kInt32:
      return "int32";
    case torch::kInt64:
      return "int64";
    case torch::kInt16:
      return "int16";
    case torch::kInt8:
      return "int8";
    case torch::kUInt8:
      return "uint8";
    case torch::kBool:
      return "bool";
    case torch::kComplexFloat:
      return "complex64";
    case torch::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(t);
  }
}

// Copies the checkpoint's values into the state's slots, moving averages
// (from `shadowed`, their variables, where the checkpoint has none),
// counters and loss scale; returns the slots it lacks, one per line.
std::string copy_entries(const std::vector<StateEntry>& all, const TensorMap& ckpt,
                         const std::map<std::string, torch::Tensor>& shadowed,
                         const std::string& path) {
  using Kind = StateEntry::Kind;
  std::string missing_slots;
  for (const auto& entry : all) {
    auto it = ckpt.find(entry.key);
    const bool found = it != ckpt.end() && it->second.sizes() == entry.tensor.sizes();
    switch (entry.kind) {
      case Kind::kVariable:
        break;
      case Kind::kSlot:
        if (found) {
          entry.tensor.copy_(it->second);
        } else {
          missing_slots += "\n  " + entry.key.substr(std::string("optimizer/").size());
        }
        break;
      case Kind::kMovingAverage:
        entry.tensor.copy_(found ? it->second : shadowed.at(entry.key));
        break;
      case Kind::kCounter:
        if (it == ckpt.end()) throw DataError("checkpoint '" + path + "' lacks " + entry.key);
        entry.tensor.copy_(it->second);
        break;
      case Kind::kLossScale:
        // Kept as it is when the checkpoint has none (an older one).
        if (found) entry.tensor.copy_(it->second);
        break;
      case Kind::kRng:
        break;
    }
  }
  return missing_slots;
}

}  // namespace

int restore_model(models::ClassifierImpl& model, const TensorMap& ckpt, const std::string& path,
                  const RestoreOptions& options) {
  std::string problems;
  int restored = 0;
  torch::NoGradGuard no_grad;
  const auto excluded = split_list(options.exclude_scopes);
  for (auto& variable : models::model_variables(model)) {
    bool skip = false;
    for (const auto& scope : excluded) {
      if (variable.name.rfind(scope, 0) == 0) skip = true;
    }
    if (skip) continue;
    auto it = ckpt.end();
    if (options.use_moving_averages) it = ckpt.find(ema_key(variable.name));
    if (it == ckpt.end()) it = ckpt.find(model_key(variable.name));
    if (it == ckpt.end()) {
      if (!options.ignore_missing) problems += "\n  missing: " + variable.name;
    } else if (!it->second.is_floating_point() && variable.tensor.is_floating_point()) {
      // There, but not as values: ignore_missing_vars does not cover it.
      problems += "\n  present but " + type_name(it->second.scalar_type()) + ": " + variable.name +
                  " (a variable is floating-point)";
    } else if (it->second.sizes() != variable.tensor.sizes()) {
      std::ostringstream os;
      os << "\n  shape mismatch: " << variable.name << " is " << variable.tensor.sizes()
         << " in the model, " << it->second.sizes() << " in the checkpoint";
      problems += os.str();
    } else {
      variable.tensor.copy_(it->second);
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

bool use_moving_averages(models::ClassifierImpl& model, const TensorMap& ckpt,
                         const std::string& path, MovingAverages choice) {
  if (choice == MovingAverages::kRaw) return false;
  std::vector<std::string> without;
  int64_t trainable = 0;
  for (const auto& v : models::model_variables(model)) {
    if (!v.trainable) continue;
    ++trainable;
    if (!ckpt.count(ema_key(v.name))) without.push_back(v.name);
  }
  if (without.empty()) return trainable > 0;
  const int64_t with = trainable - static_cast<int64_t>(without.size());
  const std::string counts = "the checkpoint '" + path + "' has moving averages of " +
                             std::to_string(with) + " of " + std::to_string(trainable) +
                             " trainable variables (none of " + without.front() +
                             (without.size() > 1 ? ", ..." : "") + ")";
  if (choice == MovingAverages::kUse) {
    throw ConfigError("moving_average_decay: " + counts +
                      "; set moving_average_decay=None to use the raw weights");
  }
  if (with > 0) {
    log::warning() << counts
                   << ": the raw weights are used, none of the moving averages (set "
                      "moving_average_decay to require them)";
  }
  return false;
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

std::vector<StateEntry> TrainState::entries() const {
  using Kind = StateEntry::Kind;
  std::vector<StateEntry> out;
  for (const auto& v : models::model_variables(model_)) {
    out.push_back({model_key(v.name), v.tensor, Kind::kVariable});
  }
  for (const auto& s : optimizer_.slots()) {
    out.push_back({"optimizer/" + s.name, s.value, Kind::kSlot});
  }
  for (const auto& [v, shadow] : ema_)
    out.push_back({ema_key(v.name), shadow, Kind::kMovingAverage});
  out.push_back({"global_step", torch::tensor(step, torch::kInt64), Kind::kCounter});
  out.push_back(
      {"input/batches_consumed", torch::tensor(batches_consumed, torch::kInt64), Kind::kCounter});
  out.push_back(
      {"loss_scale/scale", torch::tensor(scaler_.scale(), torch::kFloat64), Kind::kLossScale});
  out.push_back({"loss_scale/good_steps", torch::tensor(scaler_.good_steps(), torch::kInt64),
                 Kind::kLossScale});
  out.push_back({"rng/torch_cpu", generator_state(torch::Device(torch::kCPU)), Kind::kRng});
  // Dropout on a GPU draws from the device's generator.
  if (device_.is_cuda()) out.push_back({"rng/torch_cuda", generator_state(device_), Kind::kRng});
  return out;
}

void TrainState::set_counters(const std::vector<StateEntry>& entries) {
  double scale = scaler_.scale();
  int64_t good_steps = scaler_.good_steps();
  for (const auto& e : entries) {
    if (e.key == "global_step") step = e.tensor.item<int64_t>();
    if (e.key == "input/batches_consumed") batches_consumed = e.tensor.item<int64_t>();
    if (e.key == "loss_scale/scale") scale = e.tensor.item<double>();
    if (e.key == "loss_scale/good_steps") good_steps = e.tensor.item<int64_t>();
  }
  if (scaler_.dynamic()) scaler_.restore(scale, good_steps);
}

TensorMap TrainState::to_checkpoint() const {
  TensorMap m;
  for (const auto& e : entries()) m[e.key] = e.tensor;
  return m;
}

void TrainState::from_checkpoint(const TensorMap& ckpt, const std::string& path) {
  // The variables with restore_model's report of every missing or
  // mis-shaped one (shared with fine-tuning).
  restore_model(model_, ckpt, path);
  torch::NoGradGuard no_grad;
  const std::vector<StateEntry> all = entries();
  // Moving averages the checkpoint lacks start from their variables.
  std::map<std::string, torch::Tensor> shadowed;
  for (const auto& [variable, shadow] : ema_) shadowed[ema_key(variable.name)] = variable.tensor;
  cuda_rng_ = torch::Tensor();
  const std::string missing_slots = copy_entries(all, ckpt, shadowed, path);
  if (!missing_slots.empty()) {
    throw ConfigError("checkpoint '" + path + "' has no " + optimizer_.name() +
                      " slots for (was it written with another optimizer?):" + missing_slots);
  }
  optimizer_.slots_written();
  set_counters(all);
  // The generators: the CPU's now; the GPU's once the state is on a GPU
  // (now, or when to() moves it there).
  auto rng = ckpt.find("rng/torch_cpu");
  if (rng != ckpt.end()) set_generator_state(torch::Device(torch::kCPU), rng->second);
  auto cuda_rng = ckpt.find("rng/torch_cuda");
  if (cuda_rng != ckpt.end()) cuda_rng_ = cuda_rng->second;
  restore_cuda_rng();
}

void TrainState::restore_cuda_rng() {
  if (!device_.is_cuda() || !cuda_rng_.defined()) return;
  set_generator_state(device_, cuda_rng_);
  cuda_rng_ = torch::Tensor();
}

void TrainState::broadcast_from_chief(
    const std::function<void(const std::vector<torch::Tensor>&)>& broadcast) {
  // The RNG stays: every rank seeds it alike.
  const std::vector<StateEntry> all = entries();
  std::vector<torch::Tensor> sent;
  for (const auto& e : all) {
    if (e.kind != StateEntry::Kind::kRng) sent.push_back(e.tensor);
  }
  broadcast(sent);
  optimizer_.slots_written();
  set_counters(all);
}

void TrainState::to(const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model_.to(device);
  for (const auto& e : entries()) {
    if (e.kind == StateEntry::Kind::kSlot || e.kind == StateEntry::Kind::kMovingAverage) {
      e.tensor.set_data(e.tensor.to(device));
    }
  }
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
