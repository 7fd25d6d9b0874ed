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

double clip_by_global_norm(const std::vector<optim::Variable>& vars, double clip) {
  torch::NoGradGuard no_grad;
  double sq = 0;
  for (const auto& v : vars) {
    if (v.var.grad().defined()) sq += v.var.grad().pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  if (norm > clip) {
    for (const auto& v : vars) {
      if (v.var.grad().defined()) v.var.mutable_grad().mul_(clip / norm);
    }
  }
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
