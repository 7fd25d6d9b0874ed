#include "src/train/step.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>

#include "fastnn/errors.h"
#include "src/compat/torch_compat.h"
#include "src/log/log.h"
#include "src/train/loss.h"
#include "src/train/signals.h"

namespace fastnn::train {
namespace {

// Autocast for the forward pass; only the kind asked for is switched on.
class AutocastScope {
 public:
  explicit AutocastScope(Autocast mode) {
    switch (mode) {
      case Autocast::kOff:
        return;
      case Autocast::kCpuBFloat16:
        device_ = c10::DeviceType::CPU;
        dtype_ = at::kBFloat16;
        break;
      case Autocast::kCudaFloat16:
        device_ = c10::DeviceType::CUDA;
        dtype_ = at::kHalf;
        break;
      case Autocast::kCudaBFloat16:
        device_ = c10::DeviceType::CUDA;
        dtype_ = at::kBFloat16;
        break;
    }
    on_ = true;
    compat::set_autocast(device_, true, dtype_);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    compat::set_autocast(device_, false, dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  at::ScalarType dtype_ = at::kBFloat16;
};

// An unread step had Inf/NaN (the NaN hook's error, for a GPU run's steps
// that left their numbers on the device).
[[noreturn]] void throw_unread_divergence(int64_t first, int64_t seen_at) {
  throw DivergedError("loss or gradient norm is Inf/NaN at global_step " + std::to_string(first) +
                      " (seen at global_step " + std::to_string(seen_at) +
                      ", the first step after it that read the device)"
                      " (lower learning_rate, or set max_gradient_norm?)");
}

}  // namespace

GradientFault gradient_fault_from_env() {
  const char* value = std::getenv("FASTNN_FAULT_INF_GRAD_STEPS");
  if (!value) return {};
  std::vector<int64_t> steps;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) steps.push_back(std::stoll(item));
  }
  return [steps](int64_t step, const std::vector<optim::Variable>& vars) {
    if (std::find(steps.begin(), steps.end(), step) == steps.end()) return;
    torch::NoGradGuard no_grad;
    vars.front().var.mutable_grad().fill_(std::numeric_limits<float>::infinity());
  };
}

Step::Step(StepOptions options, models::ClassifierImpl& model, optim::Optimizer& optimizer,
           LossScaler& scaler, TrainState& state, DistributedStep* dist, GradientFault fault)
    : options_(std::move(options)),
      model_(model),
      optimizer_(optimizer),
      scaler_(scaler),
      state_(state),
      dist_(dist),
      fault_(std::move(fault)) {
  if (options_.weight_decay > 0) regularized_ = model_.regularized_weights();
}

CombinedStep Step::run(const datasets::Batch& batch, double learning_rate,
                       const std::function<double()>& now, StepStats& s,
                       bool metrics_wanted) {
  s.learning_rate = learning_rate;
  models::ModelOutput out;
  {
    AutocastScope autocast(options_.autocast);
    model_.set_global_step(state_.step);
    const bool nhwc = options_.channels_last && batch.images.dim() == 4;
    out = model_.forward(nhwc ? batch.images.contiguous(at::MemoryFormat::ChannelsLast)
                              : batch.images);
  }
  out.logits = out.logits.to(torch::kFloat32);
  if (out.aux_logits.defined()) out.aux_logits = out.aux_logits.to(torch::kFloat32);
  auto loss = classification_loss(out.logits, batch.labels, options_.label_smoothing);
  if (out.aux_logits.defined()) {
    loss = loss + options_.aux_loss_weight *
                      classification_loss(out.aux_logits, batch.labels, options_.label_smoothing);
  }
  s.spans.forward_end = now();
  // None, not zeros: backward's result becomes .grad without a zeroing
  // pass and an addition. On one process a variable no gradient reaches
  // is then left alone by the optimizer, as in TF; across workers it gets
  // the average, which is zero when no worker reached it.
  model_.zero_grad(/*set_to_none=*/true);
  if (dist_) dist_->before_backward(state_.step);
  s.loss_scale = scaler_.scale();
  if (s.loss_scale != 1.0) {
    (loss * s.loss_scale).backward();
  } else {
    loss.backward();
  }
  // Every number the step needs on the host (the loss, the correct count,
  // the gradient norm that drives the Inf/NaN test, clipping and the loss
  // scaler, the L2 term) is computed on the device and read in one copy:
  // one host synchronisation on a step that reads (two with a collective,
  // whose metrics all-reduce needs the local loss first), none on the
  // others.
  const bool read = metrics_wanted || options_.read_every_step || dist_ != nullptr ||
                    options_.max_gradient_norm.has_value() || scaler_.dynamic();
  loss = loss.detach();
  const torch::Tensor correct = out.logits.detach().argmax(1).eq(batch.labels).sum();
  const int64_t samples = batch.labels.size(0);
  CombinedStep combined;
  if (dist_) {
    // Distributed: average the data gradients first (still scaled: the
    // average is linear); the L2 term below is the same on every worker
    // (same weights), so it is added after.
    const auto local_metrics = read_scalars({loss, correct});
    LocalStop local;
    local.signal = stop_signal();
    combined = dist_->after_backward(local_metrics[0], static_cast<int64_t>(local_metrics[1]),
                                     samples, local);
  }
  const auto& vars = optimizer_.variables();
  if (s.loss_scale != 1.0) scale_gradients(vars, 1.0 / s.loss_scale);
  if (fault_) fault_(state_.step, vars);
  // The L2 gradients go in before the norm is taken (TF-slim's total loss).
  std::vector<torch::Tensor> l2_sums;
  if (!regularized_.empty()) {
    l2_sums = add_l2_regularization_gradients(regularized_, options_.weight_decay);
  }
  std::vector<torch::Tensor> pending;
  if (!dist_) pending = {loss, correct};
  pending.push_back(gradient_global_norm_tensor(vars));
  const size_t first_l2 = pending.size();
  pending.insert(pending.end(), l2_sums.begin(), l2_sums.end());
  s.batch_samples = dist_ ? combined.samples : samples;
  if (!read) {
    // Applied whatever it holds: an Inf/NaN is remembered on the device,
    // and the run stops at the next read, before any checkpoint or
    // evaluation sees the weights.
    const auto& norm = pending[first_l2 - 1];
    const auto bad = torch::isfinite(loss).logical_and(torch::isfinite(norm)).logical_not();
    if (!first_nonfinite_.defined()) {
      first_nonfinite_ =
          torch::full({}, -1, torch::TensorOptions().dtype(torch::kInt64).device(loss.device()));
    }
    first_nonfinite_ = torch::where(bad.logical_and(first_nonfinite_.lt(0)),
                                    torch::full_like(first_nonfinite_, state_.step + 1),
                                    first_nonfinite_);
    unread_ = std::move(pending);
    unread_samples_ = samples;
    s.metrics_read = false;
    s.spans.backward_end = now();
    optimizer_.step(learning_rate);
    state_.update_moving_averages();
  } else {
    unread_.clear();
    const bool flagged = first_nonfinite_.defined();
    if (flagged) pending.push_back(first_nonfinite_);
    std::vector<double> host = read_scalars(pending);
    if (flagged) {
      const double first = host.back();
      host.pop_back();
      if (first >= 0) throw_unread_divergence(static_cast<int64_t>(first), state_.step + 1);
    }
    if (dist_) {
      s.loss = combined.loss;
      s.accuracy = combined.accuracy;
    } else {
      s.loss = host[0];
      s.accuracy = host[1] / static_cast<double>(samples);
    }
    s.gradient_norm = host[first_l2 - 1];
    if (!regularized_.empty()) {
      s.loss += l2_regularization_value(host.data() + first_l2, host.size() - first_l2,
                                        options_.weight_decay);
    }
    s.spans.backward_end = now();
    s.skipped = !scaler_.update(std::isfinite(s.gradient_norm));
    if (s.skipped) {
      log::info() << "global_step " << state_.step << ": Inf/NaN gradients at loss scale "
                  << s.loss_scale << ": update skipped, loss scale now " << scaler_.scale();
    } else if (std::isfinite(s.loss) && std::isfinite(s.gradient_norm)) {
      if (options_.max_gradient_norm) {
        clip_to_global_norm(vars, s.gradient_norm, *options_.max_gradient_norm);
      }
      optimizer_.step(learning_rate);
      state_.update_moving_averages();
    }
  }
  s.spans.optimizer_end = now();
  ++state_.step;
  ++state_.batches_consumed;
  s.global_step = state_.step;
  return combined;
}

Settled Step::settle() {
  Settled r;
  std::vector<torch::Tensor> pending = unread_;
  const bool flagged = first_nonfinite_.defined();
  if (flagged) pending.push_back(first_nonfinite_);
  if (pending.empty()) return r;
  std::vector<double> host = read_scalars(pending);
  if (flagged) {
    const double first = host.back();
    host.pop_back();
    if (first >= 0) throw_unread_divergence(static_cast<int64_t>(first), state_.step);
  }
  if (!unread_.empty()) {
    r.read = true;
    r.loss = host[0];
    r.accuracy = host[1] / static_cast<double>(unread_samples_);
    if (!regularized_.empty()) {
      r.loss += l2_regularization_value(host.data() + 3, host.size() - 3, options_.weight_decay);
    }
    unread_.clear();
  }
  return r;
}

}  // namespace fastnn::train
