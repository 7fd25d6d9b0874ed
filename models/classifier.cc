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
  // TF's definition, by rejection: N(0, 1) draws, and those outside two
  // sigma drawn again (4.6 % of them, then 4.6 % of those...) until none is.
  // Only the first pass reads the whole tensor. The inverse-CDF form
  // (uniform, then erfinv) is as exact but LibTorch 1.13's erfinv is scalar
  // code (Newton steps through erf and exp), far slower than redrawing the
  // few outliers: it would dominate the building of a deep ResNet.
  torch::NoGradGuard no_grad;
  auto x = t.is_contiguous() ? t.view({-1}) : torch::empty({t.numel()}, t.options());
  x.normal_();
  auto idx = x.abs().gt(2.0).nonzero().squeeze(1);
  while (idx.numel() > 0) {
    auto redrawn = torch::empty({idx.numel()}, x.options()).normal_();
    x.index_put_({idx}, redrawn);
    idx = idx.masked_select(redrawn.abs().gt(2.0));
  }
  x.mul_(stddev);
  if (!t.is_contiguous()) t.copy_(x.view(t.sizes()));
}

}  // namespace fastnn::models
