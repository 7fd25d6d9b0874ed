#include "src/train/loss.h"

#include <torch/torch.h>

#include <cmath>

#include "fastnn/hparams.h"

namespace fastnn::train {

torch::Tensor classification_loss(const torch::Tensor& logits,
                                  const torch::Tensor& labels,
                                  double smoothing) {
  if (smoothing <= 0) return torch::nn::functional::cross_entropy(logits, labels);
  auto logp = torch::log_softmax(logits, 1);
  auto nll = -logp.gather(1, labels.unsqueeze(1)).squeeze(1);
  auto uniform = -logp.mean(1);
  return ((1.0 - smoothing) * nll + smoothing * uniform).mean();
}

double apply_l2_regularization(const std::vector<torch::Tensor>& weights,
                               double decay) {
  const auto sums = read_scalars(add_l2_regularization_gradients(weights, decay));
  return l2_regularization_value(sums.data(), sums.size(), decay);
}

std::vector<torch::Tensor> add_l2_regularization_gradients(
    const std::vector<torch::Tensor>& weights, double decay) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sums;
  sums.reserve(weights.size());
  for (const auto& w : weights) {
    sums.push_back(w.pow(2).sum());
    if (!w.requires_grad()) continue;
    if (w.grad().defined()) {
      w.mutable_grad().add_(w, decay);
    } else {
      w.mutable_grad() = w.detach() * decay;
    }
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

torch::Tensor gradient_global_norm_tensor(const std::vector<optim::Variable>& vars) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) norms.push_back(v.var.grad().norm());
  }
  if (norms.empty()) {
    const auto device = vars.empty() ? torch::Device(torch::kCPU) : vars.front().var.device();
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  }
  // One read of each gradient (a float64 copy cost ~10 % of a lenet step);
  // the per-tensor norms are combined in float64.
  return torch::stack(norms).to(torch::kFloat64).norm();
}

std::vector<double> read_scalars(const std::vector<torch::Tensor>& values) {
  if (values.empty()) return {};
  torch::NoGradGuard no_grad;
  const auto options =
      torch::TensorOptions().dtype(torch::kFloat64).device(values.front().device());
  std::vector<torch::Tensor> flat;
  flat.reserve(values.size());
  for (const auto& v : values) flat.push_back(v.detach().reshape({1}).to(options));
  const auto host = torch::cat(flat).to(torch::kCPU).contiguous();
  const double* p = host.data_ptr<double>();
  return std::vector<double>(p, p + host.numel());
}

void scale_gradients(const std::vector<optim::Variable>& vars, double factor) {
  torch::NoGradGuard no_grad;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) v.var.mutable_grad().mul_(factor);
  }
}

void clip_to_global_norm(const std::vector<optim::Variable>& vars, double norm,
                         double clip) {
  if (norm > clip) scale_gradients(vars, clip / norm);
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
