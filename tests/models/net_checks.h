// Checks shared by the model tests: build a registered network, count its
// trainable scalars, compare variable shapes against TF-slim's layout, take
// one SGD step, and copy variables between models (a save/load round trip).
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
#include "tests/models/train_step.h"

namespace fastnn::models::testing {

/// The registered network `name` with default options but num_classes,
/// image_size (0 = the network's default) and dropout_keep_prob.
inline std::shared_ptr<ClassifierImpl> create(const std::string& name, int64_t num_classes,
                                              int64_t image_size = 0,
                                              double keep = ModelOptions{}.dropout_keep_prob) {
  ModelOptions o;
  o.num_classes = num_classes;
  o.image_size = image_size;
  o.dropout_keep_prob = keep;
  return find_model(name).create(o);
}

/// Trainable scalars (BatchNorm moving statistics are buffers, not counted).
inline int64_t trainable_parameters(ClassifierImpl& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

/// TF-slim name -> shape in TF's layout: conv [kh, kw, in, out],
/// fully connected [in, out].
inline std::map<std::string, std::vector<int64_t>> tf_shapes(ClassifierImpl& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& v : model_variables(m)) {
    auto t = v.tensor;
    if (t.dim() == 4) t = t.permute({2, 3, 1, 0});
    if (t.dim() == 2) t = t.t();
    out[v.name] = t.sizes().vec();
  }
  return out;
}

/// A TF-slim variable shape in LibTorch's layout: conv [kh, kw, in, out]
/// becomes [out, in, kh, kw]; a depthwise filter [kh, kw, in, multiplier]
/// becomes [in * multiplier, 1, kh, kw]; fully connected [in, out] becomes
/// [out, in].
inline std::vector<int64_t> torch_shape(const std::string& name, const std::vector<int64_t>& tf) {
  if (tf.size() == 2) return {tf[1], tf[0]};
  if (tf.size() != 4) return tf;
  const std::string dw = "depthwise_weights";
  const bool depthwise =
      name.size() >= dw.size() && name.compare(name.size() - dw.size(), dw.size(), dw) == 0;
  if (depthwise) return {tf[2] * tf[3], 1, tf[0], tf[1]};
  return {tf[3], tf[2], tf[0], tf[1]};
}

/// Expects every {TF-slim name, TF shape} among the model's variables.
inline void expect_variables(
    ClassifierImpl& m, const std::vector<std::pair<std::string, std::vector<int64_t>>>& want) {
  std::map<std::string, std::vector<int64_t>> have;
  for (const auto& v : model_variables(m)) have[v.name] = v.tensor.sizes().vec();
  for (const auto& [name, shape] : want) {
    auto it = have.find(name);
    ASSERT_NE(it, have.end()) << "missing " << name;
    EXPECT_EQ(it->second, torch_shape(name, shape)) << name;
  }
}

/// The variable named `name`; fails the test if there is none.
inline torch::Tensor variable(ClassifierImpl& m, const std::string& name) {
  for (const auto& v : model_variables(m)) {
    if (v.name == name) return v.tensor;
  }
  ADD_FAILURE() << "missing " << name;
  return torch::zeros({1});
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

/// Standard deviation of TF's truncated normal (re-drawn beyond 2 sigma).
inline double truncated_std(double stddev) { return stddev * 0.8796; }

/// Eval-mode output for a random batch at `image_size`.
inline ModelOutput eval_forward(ClassifierImpl& m, int64_t batch, int64_t image_size) {
  torch::NoGradGuard no_grad;
  m.eval();
  return m.forward(torch::randn({batch, 3, image_size, image_size}));
}

/// The model's trainable variables, for an optimizer.
inline std::vector<optim::Variable> trainable_variables(ClassifierImpl& m) {
  std::vector<optim::Variable> vars;
  for (const auto& v : model_variables(m)) {
    if (v.trainable) vars.push_back({v.name, v.tensor});
  }
  return vars;
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
inline SgdStep sgd_step(const std::string& name, int64_t image_size, int64_t batch,
                        torch::Dtype dtype = torch::kFloat32, double fraction = 1e-3) {
  torch::manual_seed(0);
  auto m = create(name, 5, image_size, /*keep=*/1.0);
  m->to(dtype);
  auto vars = trainable_variables(*m);
  optim::GradientDescent opt(vars);
  auto x = torch::randn({batch, 3, image_size, image_size}, dtype);
  auto y = torch::arange(batch, torch::kInt64) % 5;
  namespace F = torch::nn::functional;
  auto loss0 = F::cross_entropy(m->forward(x).logits, y);
  m->zero_grad(/*set_to_none=*/false);
  loss0.backward();
  double grad2 = 0;
  for (const auto& v : vars) grad2 += v.var.grad().pow(2).sum().item<double>();
  const double before = loss0.item<double>();
  const double lr = fraction * before / grad2;
  opt.step(lr);
  torch::NoGradGuard no_grad;
  const double after = F::cross_entropy(m->forward(x).logits, y).item<double>();
  return {before, after, before - lr * grad2};
}

/// Expects one step to lower the loss by about the first-order prediction.
inline void expect_sgd_step_lowers_loss(const std::string& name, int64_t image_size, int64_t batch,
                                        torch::Dtype dtype = torch::kFloat32,
                                        double fraction = 1e-3) {
  const auto s = sgd_step(name, image_size, batch, dtype, fraction);
  EXPECT_LT(s.after, s.before) << name;
  EXPECT_NEAR((s.before - s.after) / (s.before - s.predicted), 1.0, 0.2)
      << name << ": " << s.before << " -> " << s.after << ", predicted " << s.predicted;
}

/// Cross-entropy of the logits, plus 0.4 x that of the auxiliary logits
/// when the network has them (FastNN's loss_fn).
inline torch::Tensor loss_with_aux(ClassifierImpl& m, const torch::Tensor& x,
                                   const torch::Tensor& y) {
  namespace F = torch::nn::functional;
  auto out = m.forward(x);
  auto l = F::cross_entropy(out.logits, y);
  if (out.aux_logits.defined()) l = l + 0.4 * F::cross_entropy(out.aux_logits, y);
  return l;
}

/// Loss before and after one SGD step at a fixed `lr` on a fixed batch of 4
/// (training mode, dropout off); the auxiliary head, if any, adds 0.4 x its
/// loss as in FastNN's loss_fn. Deep BatchNorm networks start with
/// exploding gradients (squared norm ~1e6 on these random batches, mostly
/// in the first convs), so the step is small: lr around 1e-6.
inline std::pair<double, double> fixed_lr_step(const std::string& name, int64_t image_size,
                                               double lr) {
  torch::manual_seed(0);
  auto m = create(name, 5, image_size, /*keep=*/1.0);
  m->train();
  optim::GradientDescent opt(trainable_variables(*m));
  auto x = torch::randn({4, 3, image_size, image_size});
  auto y = torch::tensor({0, 1, 2, 3}, torch::kInt64);
  auto loss = [&] { return loss_with_aux(*m, x, y); };
  auto loss0 = loss();
  m->zero_grad(/*set_to_none=*/false);
  loss0.backward();
  opt.step(lr);
  torch::NoGradGuard no_grad;
  return {loss0.item<double>(), loss().item<double>()};
}

/// Every variable by TF-slim name, in LibTorch's layout.
inline std::map<std::string, torch::Tensor> variable_map(ClassifierImpl& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& v : model_variables(m)) out[v.name] = v.tensor;
  return out;
}

/// A test suite's one instance of the network kName with kClasses classes
/// (seed 0, dropout keep 0.8), built once for the suite. Give each test
/// file's kName its own identifier: GCC 14 merged the model_ of two
/// instantiations whose arguments were both an anonymous namespace's kName
/// (both suites then tested one network).
template <const char* kName, int64_t kClasses>
class SharedNetwork : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::manual_seed(0);
    model_ = create(kName, kClasses, 0, 0.8);
  }
  static void TearDownTestSuite() { model_.reset(); }
  static std::map<std::string, torch::Tensor> variables() { return variable_map(*model_); }
  static inline std::shared_ptr<ClassifierImpl> model_;
};

/// The registered default image size, and the eval-mode logits (and
/// auxiliary logits, which these networks always have) at that size.
inline void expect_default_size_outputs(ClassifierImpl& m, const std::string& name, int64_t classes,
                                        int64_t size) {
  EXPECT_EQ(find_model(name).default_image_size, size);
  auto out = eval_forward(m, 1, size);
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, classes}));
  ASSERT_TRUE(out.aux_logits.defined());
  EXPECT_EQ(out.aux_logits.sizes(), (std::vector<int64_t>{1, classes}));
}

/// The network refuses an image side below `min_size` when built, and an
/// input of another size than the one it was built for.
inline void expect_smallest_input(const std::string& name, int64_t classes, int64_t min_size) {
  EXPECT_THROW(create(name, classes, min_size - 1), c10::Error) << name;
  auto m = create(name, classes, min_size);
  EXPECT_THROW(m->forward(torch::randn({2, 3, min_size + 192, min_size + 192})), c10::Error)
      << name;
}

/// One SGD step at the rate that lowers the loss by 1 % to first order
/// (train_step.h), in training mode with dropout off, on a batch of 4 with
/// random labels; the auxiliary head adds 0.4 x its loss as in FastNN's
/// loss_fn. Expects the loss to go down.
inline void expect_first_order_step_lowers_loss(const std::string& name, int64_t classes,
                                                int64_t image_size) {
  torch::manual_seed(0);
  auto m = create(name, classes, image_size, /*keep=*/1.0);
  m->train();
  auto vars = trainable_variables(*m);
  optim::GradientDescent opt(vars);
  auto x = torch::randn({4, 3, image_size, image_size});
  auto y = torch::randint(0, classes, {4}, torch::kInt64);
  auto loss_of = [&] { return loss_with_aux(*m, x, y); };
  auto loss0 = loss_of();
  m->zero_grad(/*set_to_none=*/false);
  loss0.backward();
  opt.step(fastnn::testing::first_order_rate(vars, loss0.item<double>()));
  EXPECT_LT(loss_of().item<double>(), loss0.item<double>()) << name;
}

/// Copies every variable of one model into a fresh one after a training
/// forward pass has moved the BatchNorm statistics; in eval mode both
/// must give identical logits (and auxiliary logits).
inline void expect_round_trip(const std::string& name, int64_t image_size, int64_t batch = 2) {
  torch::manual_seed(1);
  auto a = create(name, 7, image_size), b = create(name, 7, image_size);
  auto x = torch::randn({batch, 3, image_size, image_size});
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
  EXPECT_EQ(oa.logits.sizes(), (std::vector<int64_t>{batch, 7}));
  EXPECT_TRUE(torch::equal(oa.logits, ob.logits)) << name;
  if (oa.aux_logits.defined()) {
    EXPECT_TRUE(torch::equal(oa.aux_logits, ob.aux_logits)) << name;
  }
}

}  // namespace fastnn::models::testing
