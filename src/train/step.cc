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
#include "src/train/fused_gradients.h"
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

std::vector<torch::Tensor> DeviceScalars::values() const {
  std::vector<torch::Tensor> v{head, gradient_norm};
  v.insert(v.end(), l2_sums.begin(), l2_sums.end());
  return v;
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

bool Step::reads(int64_t next, bool metrics_wanted) const {
  return metrics_wanted || options_.read_every_step || scaler_.dynamic() ||
         (dist_ != nullptr && next % kStopAgreementSteps == 0);
}

// The step's phases; the numbers they leave on the device are read (once)
// only on the steps that read.
CombinedStep Step::run(const datasets::Batch& batch, double learning_rate,
                       const std::function<double()>& now, StepStats& stats, bool metrics_wanted,
                       const NextMicroBatch& more) {
  stats.learning_rate = learning_rate;
  DeviceScalars scalars;
  // None, not zeros: backward's result becomes .grad without a zeroing
  // pass and an addition. On one process a variable no gradient reaches
  // is then left alone by the optimizer, as in TF; across workers it gets
  // the average, which is zero when no worker reached it.
  model_.zero_grad(/*set_to_none=*/true);
  torch::Tensor loss = forward_loss(batch, state_.batches_consumed, scalars);
  int64_t micro = 1;
  for (; micro < options_.accumulation_steps; ++micro) {
    accumulate(loss);
    if (options_.stop_inside_step && options_.stop_inside_step()) throw StoppedInsideStep(micro);
    std::optional<datasets::Batch> next = more ? more() : std::nullopt;
    if (!next) {
      state_.batches_consumed += micro;
      throw InputEndedInsideStep(micro);
    }
    loss = forward_loss(*next, state_.batches_consumed + micro, scalars);
  }
  stats.spans.forward_end = now();
  backward_and_reduce(loss, stats, scalars);
  finish_gradients(stats, scalars);
  const int64_t next = state_.step + 1;
  const bool read = reads(next, metrics_wanted);
  // Every worker reads at the same agreement steps (or every step), so a
  // stop decided there ends every worker after the same step.
  const bool agreement =
      dist_ != nullptr && (options_.read_every_step || next % kStopAgreementSteps == 0);
  const torch::Tensor norm = scalars.gradient_norm;
  CombinedStep combined =
      read ? read_numbers(scalars, stats, agreement) : keep_unread(std::move(scalars), stats);
  stats.spans.backward_end = now();
  if (!read || should_apply(stats)) apply_update(learning_rate, norm, stats.gradient_norm, read);
  stats.spans.optimizer_end = now();
  state_.step = next;
  state_.batches_consumed += micro;
  stats.global_step = state_.step;
  return combined;
}

torch::Tensor Step::forward_loss(const datasets::Batch& batch, int64_t batch_number,
                                 DeviceScalars& scalars) {
  // Mixup / cutmix: lambda and box drawn on the host for this batch number
  // (the input position of this micro-batch: resume draws the same), the
  // mixing done on the device.
  MixParams mix;
  if (options_.mixup.enabled() && batch.images.dim() == 4) {
    mix = draw_mix(options_.mixup, batch_number, batch.images.size(2), batch.images.size(3));
  }
  const torch::Tensor images = mix.mixes() ? mix_images(batch.images, mix) : batch.images;
  models::ModelOutput out;
  {
    AutocastScope autocast(options_.autocast);
    model_.set_global_step(state_.step);
    const bool nhwc = options_.channels_last && images.dim() == 4;
    out = model_.forward(nhwc ? images.contiguous(at::MemoryFormat::ChannelsLast) : images);
  }
  const auto logits = out.logits.to(torch::kFloat32);
  auto loss = mixed_classification_loss(logits, batch.labels, mix, options_.label_smoothing);
  if (out.aux_logits.defined()) {
    loss = loss + options_.aux_loss_weight *
                      mixed_classification_loss(out.aux_logits.to(torch::kFloat32), batch.labels,
                                                mix, options_.label_smoothing);
  }
  torch::NoGradGuard no_grad;
  const int64_t samples = batch.labels.size(0);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(logits.device());
  const double sample_count = static_cast<double>(samples);
  auto head = torch::stack(
      {loss.detach().to(torch::kFloat64) * sample_count,
       logits.detach().argmax(1).eq(dominant_labels(batch.labels, mix)).sum().to(torch::kFloat64),
       torch::full({}, sample_count, f64)});
  scalars.head = scalars.head.defined() ? scalars.head + head : head;
  scalars.samples += samples;
  return loss;
}

// A micro-batch before the step's last: its gradients are added into
// .grad (autograd accumulates), nothing is reduced. Distributed, its
// BatchNorm moments are kept for the step's one all-reduce.
void Step::accumulate(const torch::Tensor& loss) {
  backward(loss, scaler_.scale());
  if (dist_) dist_->keep_micro_batch_moments();
}

void Step::backward(const torch::Tensor& loss, double loss_scale) {
  const int64_t k = options_.accumulation_steps;
  const torch::Tensor mean = k > 1 ? loss / static_cast<double>(k) : loss;
  if (loss_scale != 1.0) {
    (mean * loss_scale).backward();
  } else {
    mean.backward();
  }
}

void Step::backward_and_reduce(const torch::Tensor& loss, StepStats& s, DeviceScalars& d) {
  if (dist_) dist_->before_backward(state_.step);
  s.loss_scale = scaler_.scale();
  backward(loss, s.loss_scale);
  // Distributed: the data gradients averaged (still scaled: the average is
  // linear) and the head summed, with the BatchNorm moments, in one
  // collective; the L2 term below is the same on every worker (same
  // weights), so it is added after.
  if (dist_) {
    LocalStop local;
    local.signal = stop_signal();
    local.requested = options_.stop_requested && options_.stop_requested();
    d.head = dist_->reduce(d.head, local);
  }
}

void Step::finish_gradients(StepStats& s, DeviceScalars& d) {
  const auto& vars = optimizer_.variables();
  if (s.loss_scale != 1.0) scale_gradients(vars, 1.0 / s.loss_scale);
  if (fault_) fault_(state_.step, vars);
  // The L2 gradients go in before the norm is taken (TF-slim's total loss).
  // On the CPU both in one pass over the gradients (fused_gradients.h).
  auto fused = options_.fused_kernels ? fused_l2_and_norm(regularized_, vars, options_.weight_decay)
                                      : std::nullopt;
  if (fused) {
    d.l2_sums = std::move(fused->l2_sums);
    d.gradient_norm = std::move(fused->norm);
    return;
  }
  if (!regularized_.empty()) {
    d.l2_sums = add_l2_regularization_gradients(regularized_, options_.weight_decay);
  }
  d.gradient_norm = gradient_global_norm_tensor(vars);
}

CombinedStep Step::read_numbers(const DeviceScalars& d, StepStats& s, bool agreement) {
  unread_.reset();
  std::vector<torch::Tensor> values = d.values();
  const bool flagged = first_nonfinite_.defined();
  if (flagged) values.push_back(first_nonfinite_);
  std::vector<double> host = read_scalars(values);
  if (flagged) {
    const double first = host.back();
    host.pop_back();
    if (first >= 0) throw_unread_divergence(static_cast<int64_t>(first), state_.step + 1);
  }
  const size_t norm_at = static_cast<size_t>(d.head.numel());
  CombinedStep combined;
  if (dist_) {
    combined = dist_->combine(host.data(), agreement);
    s.batch_samples = combined.samples;
    s.loss = combined.loss;
    s.accuracy = combined.accuracy;
  } else {
    s.batch_samples = d.samples;
    s.loss = host[kLossTimesSamples] / host[kSamples];
    s.accuracy = host[kCorrect] / host[kSamples];
  }
  s.gradient_norm = host[norm_at];
  if (!regularized_.empty()) {
    s.loss += l2_regularization_value(host.data() + norm_at + 1, host.size() - norm_at - 1,
                                      options_.weight_decay);
  }
  return combined;
}

CombinedStep Step::keep_unread(DeviceScalars d, StepStats& s) {
  // Applied whatever it holds: an Inf/NaN is remembered on the device, and
  // the run stops at the next read, before any checkpoint or evaluation
  // sees the weights.
  const auto bad = torch::isfinite(d.head[kLossTimesSamples])
                       .logical_and(torch::isfinite(d.gradient_norm))
                       .logical_not();
  if (!first_nonfinite_.defined()) {
    first_nonfinite_ =
        torch::full({}, -1, torch::TensorOptions().dtype(torch::kInt64).device(d.head.device()));
  }
  first_nonfinite_ =
      torch::where(bad.logical_and(first_nonfinite_.lt(0)),
                   torch::full_like(first_nonfinite_, state_.step + 1), first_nonfinite_);
  s.metrics_read = false;
  s.batch_samples = d.samples;
  unread_ = std::move(d);
  if (!dist_) return {};
  CombinedStep combined = dist_->combine(nullptr, false);
  s.batch_samples = combined.samples;
  return combined;
}

// A step that read its numbers: dynamic loss scaling decides, and a
// non-finite loss or norm is not applied (the NaN hook reports it).
bool Step::should_apply(StepStats& s) {
  s.skipped = !scaler_.update(std::isfinite(s.gradient_norm));
  if (s.skipped) {
    log::info() << "global_step " << state_.step << ": Inf/NaN gradients at loss scale "
                << s.loss_scale << ": update skipped, loss scale now " << scaler_.scale();
    return false;
  }
  return std::isfinite(s.loss) && std::isfinite(s.gradient_norm);
}

// Clipping (with the norm read, or on the device from its tensor: the same
// factor clip / max(norm, clip)), the optimizer, the moving averages.
void Step::apply_update(double learning_rate, const torch::Tensor& norm, double read_norm,
                        bool read) {
  const auto& vars = optimizer_.variables();
  if (options_.max_gradient_norm) {
    if (read) {
      clip_to_global_norm(vars, read_norm, *options_.max_gradient_norm);
    } else {
      clip_to_global_norm(vars, norm, *options_.max_gradient_norm);
    }
  }
  optimizer_.step(learning_rate);
  state_.update_moving_averages();
}

LastStepMetrics Step::settle() {
  LastStepMetrics r;
  std::vector<torch::Tensor> pending;
  if (unread_) pending = unread_->values();
  const bool flagged = first_nonfinite_.defined();
  if (flagged) pending.push_back(first_nonfinite_);
  if (pending.empty()) return r;
  std::vector<double> host = read_scalars(pending);
  if (flagged) {
    const double first = host.back();
    host.pop_back();
    if (first >= 0) throw_unread_divergence(static_cast<int64_t>(first), state_.step);
  }
  if (unread_) {
    const size_t norm_at = static_cast<size_t>(unread_->head.numel());
    r.read = true;
    r.loss = host[kLossTimesSamples] / host[kSamples];
    r.accuracy = host[kCorrect] / host[kSamples];
    if (!regularized_.empty()) {
      r.loss += l2_regularization_value(host.data() + norm_at + 1, host.size() - norm_at - 1,
                                        options_.weight_decay);
    }
    unread_.reset();
  }
  return r;
}

}  // namespace fastnn::train
