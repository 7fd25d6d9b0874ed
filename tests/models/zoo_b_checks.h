// Helpers for the Inception v1-v3 and MobileNet v1/v2 tests: build a
// registered network, count its trainable scalars, read variable shapes in
// TF's layout, take one SGD step, copy variables between models.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/model_factory.h"
#include "src/optim/optimizers.h"

namespace fastnn::models::zoo_b {

inline std::shared_ptr<ClassifierImpl> build(const std::string& name,
                                             int64_t num_classes,
                                             int64_t image_size = 0,
                                             double keep = 1.0) {
  ModelOptions o;
  o.num_classes = num_classes;
  o.image_size = image_size;
  o.dropout_keep_prob = keep;
  return find_model(name).create(o);
}

/// Trainable scalars; BatchNorm moving statistics are buffers, not counted.
inline int64_t count_parameters(ClassifierImpl& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    n += p.numel();
  return n;
}

/// A TF-slim variable shape in LibTorch's layout: conv [kh, kw, in, out]
/// becomes [out, in, kh, kw]; a depthwise filter [kh, kw, in, multiplier]
/// becomes [in * multiplier, 1, kh, kw].
inline std::vector<int64_t> torch_shape(const std::string& name,
                                        const std::vector<int64_t>& tf) {
  if (tf.size() != 4)
    return tf;
  const std::string dw = "depthwise_weights";
  const bool depthwise =
      name.size() >= dw.size() &&
      name.compare(name.size() - dw.size(), dw.size(), dw) == 0;
  if (depthwise)
    return {tf[2] * tf[3], 1, tf[0], tf[1]};
  return {tf[3], tf[2], tf[0], tf[1]};
}

/// Expects every {TF-slim name, TF shape} among the model's variables.
inline void expect_variables(
    ClassifierImpl& m,
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& want) {
  std::map<std::string, std::vector<int64_t>> have;
  for (const auto& v : model_variables(m))
    have[v.name] = v.tensor.sizes().vec();
  for (const auto& [name, shape] : want) {
    auto it = have.find(name);
    ASSERT_NE(it, have.end()) << "missing " << name;
    EXPECT_EQ(it->second, torch_shape(name, shape)) << name;
  }
}

/// Eval-mode output shapes for a batch at `image_size`.
inline ModelOutput eval_forward(ClassifierImpl& m,
                                int64_t batch,
                                int64_t image_size) {
  torch::NoGradGuard no_grad;
  m.eval();
  return m.forward(torch::randn({batch, 3, image_size, image_size}));
}

/// Loss before and after one SGD step on a fixed batch (training mode,
/// dropout off); the auxiliary head, if any, adds 0.4 x its loss as in
/// FastNN's loss_fn. Deep BatchNorm networks start with exploding
/// gradients (squared norm ~1e6 on these random batches, mostly in the
/// first convs), so the step is small: lr around 1e-6.
inline std::pair<double, double> sgd_step(const std::string& name,
                                          int64_t image_size,
                                          double lr) {
  torch::manual_seed(0);
  auto m = build(name, 5, image_size);
  m->train();
  std::vector<optim::Variable> vars;
  for (const auto& v : model_variables(*m)) {
    if (v.trainable)
      vars.push_back({v.name, v.tensor});
  }
  optim::GradientDescent opt(vars);
  auto x = torch::randn({4, 3, image_size, image_size});
  auto y = torch::tensor({0, 1, 2, 3}, torch::kInt64);
  auto loss = [&] {
    namespace F = torch::nn::functional;
    auto out = m->forward(x);
    auto l = F::cross_entropy(out.logits, y);
    if (out.aux_logits.defined())
      l = l + 0.4 * F::cross_entropy(out.aux_logits, y);
    return l;
  };
  auto loss0 = loss();
  m->zero_grad();
  loss0.backward();
  opt.step(lr);
  torch::NoGradGuard no_grad;
  return {loss0.item<double>(), loss().item<double>()};
}

/// Copies every variable of one model into a fresh one after a training
/// forward pass has moved the BatchNorm statistics; in eval mode both
/// must give identical logits (and auxiliary logits).
inline void expect_round_trip(const std::string& name, int64_t image_size) {
  torch::manual_seed(1);
  auto a = build(name, 6, image_size), b = build(name, 6, image_size);
  auto x = torch::randn({2, 3, image_size, image_size});
  torch::NoGradGuard no_grad;
  a->train();
  a->forward(x);
  auto va = model_variables(*a), vb = model_variables(*b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].name, vb[i].name);
    vb[i].tensor.copy_(va[i].tensor);
  }
  a->eval();
  b->eval();
  auto oa = a->forward(x), ob = b->forward(x);
  EXPECT_EQ(oa.logits.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_TRUE(torch::equal(oa.logits, ob.logits)) << name;
  if (oa.aux_logits.defined()) {
    EXPECT_TRUE(torch::equal(oa.aux_logits, ob.aux_logits)) << name;
  }
}

/// The variable named `name`; fails the test if there is none.
inline torch::Tensor variable(ClassifierImpl& m, const std::string& name) {
  for (const auto& v : model_variables(m)) {
    if (v.name == name)
      return v.tensor;
  }
  ADD_FAILURE() << "missing " << name;
  return torch::zeros({1});
}

/// Standard deviation of TF's truncated normal (re-drawn beyond 2 sigma).
inline double truncated_std(double stddev) {
  return stddev * 0.8796;
}

/// Number of variables whose TF-slim name ends in `suffix`.
inline int count_named(ClassifierImpl& m, const std::string& suffix) {
  int n = 0;
  for (const auto& v : model_variables(m)) {
    const auto& s = v.name;
    if (s.size() >= suffix.size() &&
        s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      ++n;
    }
  }
  return n;
}

}  // namespace fastnn::models::zoo_b
