#include "models/classifier.h"

#include <torch/torch.h>

namespace fastnn::models {

std::vector<torch::Tensor> ClassifierImpl::regularized_weights() {
  std::vector<torch::Tensor> out;
  for (const auto& p : named_parameters()) {
    const auto& key = p.key();
    bool is_weight = key.size() >= 6 && key.compare(key.size() - 6, 6, "weight") == 0;
    if (is_weight && p.value().dim() >= 2) out.push_back(p.value());
  }
  return out;
}

std::string tf_variable_name(const std::string& scope,
                             const std::string& torch_name) {
  std::string path = torch_name;
  std::string leaf;
  auto dot = path.rfind('.');
  if (dot == std::string::npos) {
    leaf = path;
    path.clear();
  } else {
    leaf = path.substr(dot + 1);
    path = path.substr(0, dot);
  }
  for (char& c : path) {
    if (c == '.') c = '/';
  }
  if (leaf == "weight") {
    leaf = "weights";
  } else if (leaf == "bias") {
    leaf = "biases";
  } else if (leaf == "running_mean") {
    leaf = "moving_mean";
  } else if (leaf == "running_var") {
    leaf = "moving_variance";
  }
  std::string name = scope;
  if (!path.empty()) name += "/" + path;
  return name + "/" + leaf;
}

std::vector<NamedVariable> model_variables(ClassifierImpl& model) {
  std::vector<NamedVariable> out;
  for (const auto& p : model.named_parameters()) {
    out.push_back({tf_variable_name(model.scope(), p.key()), p.value(), true});
  }
  for (const auto& b : model.named_buffers()) {
    if (b.key().find("num_batches_tracked") != std::string::npos) continue;
    out.push_back({tf_variable_name(model.scope(), b.key()), b.value(), false});
  }
  return out;
}

void truncated_normal_(torch::Tensor t, double stddev) {
  torch::NoGradGuard no_grad;
  t.normal_(0.0, stddev);
  const double bound = 2.0 * stddev;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto outside = t.abs() > bound;
    int64_t n = outside.sum().item<int64_t>();
    if (n == 0) return;
    auto fresh = torch::empty({n}, t.options()).normal_(0.0, stddev);
    t.masked_scatter_(outside, fresh);
  }
  t.clamp_(-bound, bound);
}

}  // namespace fastnn::models
