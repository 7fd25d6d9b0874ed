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
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (const auto& w : weights) {
    sum += w.pow(2).sum().item<double>();
    if (!w.requires_grad()) continue;
    if (w.grad().defined()) {
      w.mutable_grad().add_(w, decay);
    } else {
      w.mutable_grad() = w.detach() * decay;
    }
  }
  return 0.5 * decay * sum;
}

double gradient_global_norm(const std::vector<optim::Variable>& vars) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) norms.push_back(v.var.grad().norm());
  }
  // One read of each gradient (a float64 copy cost ~10 % of a lenet step);
  // the per-tensor norms are combined in float64.
  return norms.empty() ? 0.0 : torch::stack(norms).to(torch::kFloat64).norm().item<double>();
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
