// Checks shared by the model tests: build a registered network, count its
// trainable scalars, compare variable shapes against TF-slim's layout (the
// tables in tf_slim_variables.txt), take one SGD step, and copy variables
// between models (a save/load round trip).
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "models/model_factory.h"
#include "src/optim/optimizers.h"
#include "tests/models/train_step.h"
#include "tests/test_paths.h"

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

/// A variable's TF-slim name. Networks that TF-slim builds without an outer
/// scope (NASNet, PNASNet) get a leading '/' from tf_variable_name(), which
/// TF-slim's names do not have; it is dropped here.
inline std::string tf_name(const std::string& name) {
  return !name.empty() && name[0] == '/' ? name.substr(1) : name;
}

/// TF-slim name -> shape in TF's layout: conv [kh, kw, in, out], depthwise
/// [kh, kw, in, 1], fully connected [in, out].
inline std::map<std::string, std::vector<int64_t>> tf_shapes(ClassifierImpl& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& v : model_variables(m)) {
    auto t = v.tensor;
    const bool dw = v.name.find("depthwise_weights") != std::string::npos;
    if (t.dim() == 4) t = t.permute({2, 3, dw ? 0 : 1, dw ? 1 : 0});
    if (t.dim() == 2) t = t.t();
    out[tf_name(v.name)] = t.sizes().vec();
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

/// tests/models/tf_slim_variables.txt, the tables of TF-slim variables the
/// model tests expect (its header describes the format).
inline constexpr char kVariableTablesFile[] = "tests/models/tf_slim_variables.txt";

/// A table's variable: its TF-slim name, its shape in TF's layout, and the
/// line of kVariableTablesFile that gives them.
struct TableVariable {
  std::string name;
  std::vector<int64_t> shape;
  int line;
};

/// kVariableTablesFile's tables by id, and what in it does not parse.
struct VariableTables {
  std::map<std::string, std::vector<TableVariable>> tables;
  std::vector<std::string> errors;
};

/// "3,3,64,128" -> {3, 3, 64, 128}; empty when any dimension is not a
/// positive whole number.
inline std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::istringstream in(text);
  for (std::string d; std::getline(in, d, ',');) {
    if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(d) == 0) {
      return {};
    }
    dims.push_back(std::stoll(d));
  }
  if (!text.empty() && text.back() == ',') return {};
  return dims;
}

/// kVariableTablesFile, read once through the test path mechanism.
inline const VariableTables& variable_tables() {
  static const VariableTables tables = [] {
    VariableTables t;
    const std::string path = std::string(FASTNN_SOURCE_DIR) + "/" + kVariableTablesFile;
    std::ifstream file(path);
    if (!file) {
      t.errors.push_back("cannot read " + path);
      return t;
    }
    int n = 0;
    for (std::string text; std::getline(file, text);) {
      ++n;
      text = text.substr(0, text.find('#'));
      std::istringstream line(text);
      std::string id, name, shape, extra;
      if (!(line >> id)) continue;  // blank or comment only
      const std::string where = std::string(kVariableTablesFile) + ":" + std::to_string(n);
      if (!(line >> name >> shape) || (line >> extra)) {
        t.errors.push_back(where + ": not TABLE VARIABLE SHAPE");
        continue;
      }
      auto dims = parse_shape(shape);
      if (dims.empty()) {
        t.errors.push_back(where + ": bad shape " + shape);
        continue;
      }
      auto& table = t.tables[id];
      for (const auto& v : table) {
        if (v.name == name) t.errors.push_back(where + ": " + id + " lists " + name + " again");
      }
      table.push_back({name, std::move(dims), n});
    }
    return t;
  }();
  return tables;
}

/// Expects every variable of table `id` in kVariableTablesFile (one table
/// per network as a test builds it, e.g. "vgg_16:1000") among the model's
/// variables, with the table's TF shape in LibTorch's layout. Fails when
/// the file does not parse or has no table `id`.
inline void expect_variables_from_table(ClassifierImpl& m, const std::string& id) {
  const auto& t = variable_tables();
  for (const auto& e : t.errors) ADD_FAILURE() << e;
  auto table = t.tables.find(id);
  if (table == t.tables.end() || table->second.empty()) {
    ADD_FAILURE() << "no table " << id << " in " << kVariableTablesFile;
    return;
  }
  std::map<std::string, std::vector<int64_t>> have;
  for (const auto& v : model_variables(m)) have[tf_name(v.name)] = v.tensor.sizes().vec();
  for (const auto& v : table->second) {
    const std::string where = std::string(kVariableTablesFile) + ":" + std::to_string(v.line);
    auto it = have.find(v.name);
    if (it == have.end()) {
      ADD_FAILURE() << id << ": missing " << v.name << " (" << where << ")";
      continue;
    }
    const auto& model_shape = it->second;
    const auto table_shape = torch_shape(v.name, v.shape);  // LibTorch's layout
    EXPECT_EQ(model_shape, table_shape)
        << id << ": " << v.name << " has the wrong shape (" << where << ")";
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

/// A truncated normal (2 sigma) of `sigma`: its std is 0.8796 sigma (within
/// 2 %) and nothing lies beyond 2 sigma.
inline void expect_truncated_normal(const torch::Tensor& t, double sigma, const std::string& name) {
  EXPECT_NEAR(t.std().item<double>(), 0.8796 * sigma, 0.02 * sigma) << name;
  EXPECT_LE(t.abs().max().item<double>(), 2 * sigma + 1e-6) << name;
}

/// Xavier-uniform U(-b, b), b = sqrt(6 / (fan_in + fan_out)): nothing beyond
/// b + `slack` (float rounding), and a std of b / sqrt(3) within 1 %.
inline void expect_xavier_uniform(const torch::Tensor& t, int64_t fan_in, int64_t fan_out,
                                  double slack, const std::string& name) {
  const double bound = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  EXPECT_LE(t.abs().max().item<double>(), bound + slack) << name;
  EXPECT_NEAR(t.std().item<double>(), bound / std::sqrt(3.0), 0.01 * bound) << name;
}

/// Standard deviation of TF's truncated normal (re-drawn beyond 2 sigma).
inline double truncated_std(double stddev) { return stddev * 0.8796; }

/// Eval-mode output for a random batch at `image_size`.
inline ModelOutput eval_forward(ClassifierImpl& m, int64_t batch, int64_t image_size) {
  torch::NoGradGuard no_grad;
  m.eval();
  return m.forward(torch::randn({batch, 3, image_size, image_size}));
}

/// The logits are [batch, classes]; the auxiliary logits the same when
/// `aux`, else absent.
inline void expect_logits(const ModelOutput& out, int64_t batch, int64_t classes, bool aux,
                          const std::string& name = "") {
  EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{batch, classes})) << name;
  if (!aux) {
    EXPECT_FALSE(out.aux_logits.defined()) << name;
    return;
  }
  ASSERT_TRUE(out.aux_logits.defined()) << name;
  EXPECT_EQ(out.aux_logits.sizes(), (std::vector<int64_t>{batch, classes})) << name;
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
                                   const torch::Tensor& y, bool require_aux = false) {
  namespace F = torch::nn::functional;
  auto out = m.forward(x);
  if (require_aux) EXPECT_TRUE(out.aux_logits.defined()) << m.scope() << ": no auxiliary head";
  auto l = F::cross_entropy(out.logits, y);
  if (out.aux_logits.defined()) l = l + 0.4 * F::cross_entropy(out.aux_logits, y);
  return l;
}

/// Loss (with the auxiliary head's, as in loss_with_aux) before and after
/// one SGD step on the batch (x, y) in training mode; `rate(vars, loss)`
/// picks the step size from the variables' gradients and the loss before.
/// `require_aux`: the network must have its auxiliary head in training.
template <typename Rate>
std::pair<double, double> step_losses(ClassifierImpl& m, const torch::Tensor& x,
                                      const torch::Tensor& y, Rate rate, bool require_aux = false) {
  m.train();
  auto vars = trainable_variables(m);
  optim::GradientDescent opt(vars);
  auto loss0 = loss_with_aux(m, x, y, require_aux);
  m.zero_grad(/*set_to_none=*/false);
  loss0.backward();
  opt.step(rate(vars, loss0.item<double>()));
  torch::NoGradGuard no_grad;
  return {loss0.item<double>(), loss_with_aux(m, x, y).item<double>()};
}

/// One SGD step on (x, y) at the rate that lowers the loss by 1 % to first
/// order (train_step.h); expects the loss to go down (and, with
/// `require_aux`, the auxiliary head to be there and in the loss).
inline void expect_first_order_step(ClassifierImpl& m, const torch::Tensor& x,
                                    const torch::Tensor& y, const std::string& name,
                                    bool require_aux = false) {
  const auto [before, after] = step_losses(
      m, x, y,
      [](const auto& vars, double loss) { return fastnn::testing::first_order_rate(vars, loss); },
      require_aux);
  EXPECT_LT(after, before) << name;
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
  auto x = torch::randn({4, 3, image_size, image_size});
  auto y = torch::tensor({0, 1, 2, 3}, torch::kInt64);
  return step_losses(*m, x, y, [lr](const auto&, double) { return lr; });
}

/// Expects one fixed_lr_step to lower the loss.
inline void expect_fixed_lr_step_lowers_loss(const std::string& name, int64_t image_size,
                                             double lr) {
  const auto [before, after] = fixed_lr_step(name, image_size, lr);
  EXPECT_LT(after, before) << name;
}

/// Every variable by TF-slim name, in LibTorch's layout.
inline std::map<std::string, torch::Tensor> variable_map(ClassifierImpl& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& v : model_variables(m)) out[v.name] = v.tensor;
  return out;
}

/// A test suite's one instance of the network kName with kClasses classes
/// (seed 0, dropout keep kKeepPercent / 100), built once for the suite.
/// Give each test file's kName its own identifier: GCC 14 merges the model_
/// of two instantiations whose arguments are both an anonymous namespace's
/// kName (both suites then test one network).
template <const char* kName, int64_t kClasses, int kKeepPercent = 80>
class SharedNetwork : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::manual_seed(0);
    model_ = create(kName, kClasses, 0, kKeepPercent / 100.0);
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
  auto x = torch::randn({4, 3, image_size, image_size});
  auto y = torch::randint(0, classes, {4}, torch::kInt64);
  expect_first_order_step(*m, x, y, name);
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
