#include "models/classifier.h"

#include <torch/torch.h>

#include <cmath>

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

std::string tf_variable_name(const std::string& scope, const std::string& torch_name) {
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
  // NASNet and PNASNet have no outer scope in TF-slim.
  std::string name = scope;
  if (!path.empty()) name += (name.empty() ? "" : "/") + path;
  return name + (name.empty() ? "" : "/") + leaf;
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
  // One pass: a uniform draw between the normal CDF at -2 and +2, mapped
  // back through the inverse CDF, is exactly N(0, 1) truncated at 2 sigma.
  torch::NoGradGuard no_grad;
  const double lo = 0.5 * std::erfc(2.0 / std::sqrt(2.0));  // Phi(-2)
  t.uniform_(2.0 * lo - 1.0, 1.0 - 2.0 * lo);               // 2u - 1
  t.erfinv_().mul_(std::sqrt(2.0) * stddev).clamp_(-2.0 * stddev, 2.0 * stddev);
}

}  // namespace fastnn::models
