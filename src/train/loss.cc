#include "src/train/loss.h"

#include <torch/torch.h>

#include <atomic>
#include <cmath>

#include "src/compat/torch_compat.h"
#include "src/config/value_parse.h"

namespace fastnn::train {

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                  double smoothing) {
  if (smoothing <= 0) return torch::nn::functional::cross_entropy(logits, labels);
  auto logp = torch::log_softmax(logits, 1);
  auto nll = -logp.gather(1, labels.unsqueeze(1)).squeeze(1);
  auto uniform = -logp.mean(1);
  return ((1.0 - smoothing) * nll + smoothing * uniform).mean();
}

double apply_l2_regularization(const std::vector<torch::Tensor>& weights, double decay) {
  const auto sums = read_scalars(add_l2_regularization_gradients(weights, decay));
  return l2_regularization_value(sums.data(), sums.size(), decay);
}

std::vector<torch::Tensor> add_l2_regularization_gradients(
    const std::vector<torch::Tensor>& weights, double decay) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sums;
  if (!weights.empty() && compat::use_foreach(weights.front().device())) {
    // CUDA: every weight's norm in one fused launch, squared in float64:
    // one tensor of the per-weight sums (the logged value only).
    sums.push_back(torch::stack(compat::foreach_norm(weights)).to(torch::kFloat64).pow(2));
  } else {
    sums.reserve(weights.size());
    for (const auto& w : weights) sums.push_back(w.pow(2).sum());
  }
  std::vector<torch::Tensor> grads, with_grad;
  for (const auto& w : weights) {
    if (!w.requires_grad()) continue;
    if (w.grad().defined()) {
      grads.push_back(w.grad());
      with_grad.push_back(w);
    } else {
      w.mutable_grad() = w.detach() * decay;
    }
  }
  if (!grads.empty() && compat::use_foreach(grads.front().device())) {
    compat::foreach_add_(grads, with_grad, decay);
  } else {
    for (size_t i = 0; i < grads.size(); ++i) grads[i].add_(with_grad[i], decay);
  }
  return sums;
}

double l2_regularization_value(const double* square_sums, size_t n, double decay) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += square_sums[i];
  return 0.5 * decay * sum;
}

double gradient_global_norm(const std::vector<optim::Variable>& vars) {
  return gradient_global_norm_tensor(vars).item<double>();
}

namespace {

// The defined gradients.
std::vector<torch::Tensor> gradients_of(const std::vector<optim::Variable>& vars) {
  std::vector<torch::Tensor> grads;
  grads.reserve(vars.size());
  for (const auto& v : vars) {
    if (v.var.grad().defined()) grads.push_back(v.var.grad());
  }
  return grads;
}

std::atomic<int64_t> reads_made{0};

}  // namespace

torch::Tensor gradient_global_norm_tensor(const std::vector<optim::Variable>& vars) {
  torch::NoGradGuard no_grad;
  const auto grads = gradients_of(vars);
  if (grads.empty()) {
    const auto device = vars.empty() ? torch::Device(torch::kCPU) : vars.front().var.device();
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  }
  // One read of each gradient (a float64 copy would cost a visible share of
  // a lenet step); the per-tensor norms are combined in float64. CUDA: every
  // per-tensor norm in one fused launch.
  std::vector<torch::Tensor> norms;
  if (compat::use_foreach(grads.front().device())) {
    norms = compat::foreach_norm(grads);
  } else {
    norms.reserve(grads.size());
    for (const auto& g : grads) norms.push_back(g.norm());
  }
  return torch::stack(norms).to(torch::kFloat64).norm();
}

std::vector<double> read_scalars(const std::vector<torch::Tensor>& values) {
  if (values.empty()) return {};
  ++reads_made;
  torch::NoGradGuard no_grad;
  const auto options =
      torch::TensorOptions().dtype(torch::kFloat64).device(values.front().device());
  std::vector<torch::Tensor> flat;
  flat.reserve(values.size());
  for (const auto& v : values) flat.push_back(v.detach().reshape({-1}).to(options));
  const auto host = torch::cat(flat).to(torch::kCPU).contiguous();
  const double* p = host.data_ptr<double>();
  return std::vector<double>(p, p + host.numel());
}

int64_t host_reads() { return reads_made.load(); }

void scale_gradients(const std::vector<optim::Variable>& vars, double factor) {
  torch::NoGradGuard no_grad;
  const auto grads = gradients_of(vars);
  if (grads.empty()) return;
  if (compat::use_foreach(grads.front().device())) {
    compat::foreach_mul_(grads, factor);
    return;
  }
  for (const auto& g : grads) g.mul_(factor);
}

void clip_to_global_norm(const std::vector<optim::Variable>& vars, double norm, double clip) {
  if (norm > clip) scale_gradients(vars, clip / norm);
}

void clip_to_global_norm(const std::vector<optim::Variable>& vars, const torch::Tensor& norm,
                         double clip) {
  torch::NoGradGuard no_grad;
  const auto grads = gradients_of(vars);
  if (grads.empty()) return;
  // A true division (clip / norm, as the host's), not clip · (1 / norm).
  const auto factor = torch::full_like(norm, clip) / norm.clamp_min(clip);
  if (compat::use_foreach(grads.front().device())) {
    compat::foreach_mul_(grads, factor.to(grads.front().scalar_type()));
    return;
  }
  for (const auto& g : grads) g.mul_(factor);
}

double clip_by_global_norm(const std::vector<optim::Variable>& vars, double clip) {
  const double norm = gradient_global_norm(vars);
  clip_to_global_norm(vars, norm, clip);
  return norm;
}

double moving_average_decay_at(double decay, int64_t num_updates) {
  const double n = static_cast<double>(num_updates);
  return std::min(decay, (1.0 + n) / (10.0 + n));
}

bool in_scopes(const std::string& name, const std::string& scopes) {
  const auto list = split_list(scopes);
  if (list.empty()) return true;
  for (const auto& scope : list) {
    if (name.rfind(scope, 0) == 0) return true;
  }
  return false;
}

}  // namespace fastnn::train
