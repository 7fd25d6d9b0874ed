// Checks shared by the TF-slim model tests: parameter counts, variable
// shapes in TF's layout, one SGD step, and a save/load round trip.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/model_factory.h"
#include "src/optim/optimizers.h"

namespace fastnn::models::testing {

/// The registered network `name` with default options but num_classes.
inline std::shared_ptr<ClassifierImpl> create(const std::string& name,
                                              int64_t num_classes) {
  ModelOptions o;
  o.num_classes = num_classes;
  return find_model(name).create(o);
}

/// Trainable scalars (BatchNorm moving statistics excluded).
inline int64_t trainable_parameters(ClassifierImpl& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    n += p.numel();
  return n;
}

/// TF-slim name -> shape in TF's layout: conv [kh, kw, in, out],
/// fully connected [in, out].
inline std::map<std::string, std::vector<int64_t>> tf_shapes(
    ClassifierImpl& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& v : model_variables(m)) {
    auto t = v.tensor;
    if (t.dim() == 4)
      t = t.permute({2, 3, 1, 0});
    if (t.dim() == 2)
      t = t.t();
    out[v.name] = t.sizes().vec();
  }
  return out;
}

/// Expects each {name, shape} among the model's variables.
inline void expect_variables(
    ClassifierImpl& m,
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& want) {
  const auto have = tf_shapes(m);
  for (const auto& [name, shape] : want) {
    auto it = have.find(name);
    ASSERT_NE(it, have.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
}

/// One SGD step on a fixed batch, in training mode with dropout off.
struct SgdStep {
  double before;     // cross-entropy before the step
  double after;      // and after
  double predicted;  // first-order prediction: before - lr * |grad|^2
};

/// Takes one SGD step sized so that the first-order prediction lowers the
/// loss by `fraction` of itself: lr = fraction * loss / |grad|^2. Deep
/// BatchNorm nets at initialization have gradients too large for one fixed
/// learning rate to suit every net, and are sensitive enough that float32
/// rounding hides small steps; `dtype` kFloat64 avoids that.
inline SgdStep sgd_step(const std::string& name,
                        int64_t image_size,
                        int64_t batch,
                        torch::Dtype dtype = torch::kFloat32,
                        double fraction = 1e-3) {
  torch::manual_seed(0);
  ModelOptions o;
  o.num_classes = 5;
  o.dropout_keep_prob = 1.0;
  o.image_size = image_size;
  auto m = find_model(name).create(o);
  m->to(dtype);
  std::vector<optim::Variable> vars;
  for (const auto& v : model_variables(*m)) {
    if (v.trainable)
      vars.push_back({v.name, v.tensor});
  }
  optim::GradientDescent opt(vars);
  auto x = torch::randn({batch, 3, image_size, image_size}, dtype);
  auto y = torch::arange(batch, torch::kInt64) % 5;
  namespace F = torch::nn::functional;
  auto loss0 = F::cross_entropy(m->forward(x).logits, y);
  m->zero_grad();
  loss0.backward();
  double grad2 = 0;
  for (const auto& v : vars)
    grad2 += v.var.grad().pow(2).sum().item<double>();
  const double before = loss0.item<double>();
  const double lr = fraction * before / grad2;
  opt.step(lr);
  torch::NoGradGuard no_grad;
  const double after = F::cross_entropy(m->forward(x).logits, y).item<double>();
  return {before, after, before - lr * grad2};
}

/// Expects one step to lower the loss by about the first-order prediction.
inline void expect_sgd_step_lowers_loss(const std::string& name,
                                        int64_t image_size,
                                        int64_t batch,
                                        torch::Dtype dtype = torch::kFloat32,
                                        double fraction = 1e-3) {
  const auto s = sgd_step(name, image_size, batch, dtype, fraction);
  EXPECT_LT(s.after, s.before) << name;
  EXPECT_NEAR((s.before - s.after) / (s.before - s.predicted), 1.0, 0.2)
      << name << ": " << s.before << " -> " << s.after << ", predicted "
      << s.predicted;
}

/// Copies every variable (moving statistics included, after a training
/// forward has moved them) into a fresh model; eval logits must match.
inline void expect_round_trip(const std::string& name,
                              int64_t image_size,
                              int64_t batch = 2) {
  torch::NoGradGuard no_grad;
  auto a = create(name, 7), b = create(name, 7);
  auto x = torch::randn({batch, 3, image_size, image_size});
  a->forward(x);
  auto va = model_variables(*a), vb = model_variables(*b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].name, vb[i].name);
    vb[i].tensor.copy_(va[i].tensor);
  }
  a->eval();
  b->eval();
  auto la = a->forward(x).logits, lb = b->forward(x).logits;
  EXPECT_EQ(la.sizes(), (std::vector<int64_t>{batch, 7}));
  EXPECT_TRUE(torch::equal(la, lb)) << name;
}

}  // namespace fastnn::models::testing
