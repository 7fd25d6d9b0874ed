// The fused CPU gradient pass against LibTorch's operators (the path it
// replaces): the same gradients, L2 sums and norm to float rounding, the
// same bits at any thread count, and nothing touched where it does not apply.
#include "src/train/fused_gradients.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "src/train/loss.h"

namespace fastnn::train {
namespace {

// LeNet's shapes (fc3 spans many blocks; 10 and 1024*10+3 leave tails).
std::vector<optim::Variable> make_vars(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<optim::Variable> vars;
  for (auto shape : std::vector<std::vector<int64_t>>{
           {32, 1, 5, 5}, {32}, {64, 32, 5, 5}, {64}, {3136, 1024}, {1024}, {1027, 10}, {10}}) {
    auto w = torch::randn(shape).requires_grad_();
    w.mutable_grad() = torch::randn(shape) * 0.01;
    vars.push_back({"v" + std::to_string(vars.size()), w});
  }
  return vars;
}

// The weights, not the biases, as the models' regularized_weights().
std::vector<torch::Tensor> weights_of(const std::vector<optim::Variable>& vars) {
  std::vector<torch::Tensor> w;
  for (size_t i = 0; i < vars.size(); i += 2) w.push_back(vars[i].var);
  return w;
}

// The norm summed in float64 throughout: the reference for both paths.
double exact_norm(const std::vector<optim::Variable>& vars) {
  double sum = 0;
  for (const auto& v : vars) sum += v.var.grad().to(torch::kFloat64).pow(2).sum().item<double>();
  return std::sqrt(sum);
}

std::vector<torch::Tensor> grads_of(const std::vector<optim::Variable>& vars) {
  std::vector<torch::Tensor> g;
  for (const auto& v : vars) g.push_back(v.var.grad().clone());
  return g;
}

TEST(FusedGradients, MatchTheOperatorsPath) {
  const double decay = 4e-4;
  auto fused_vars = make_vars(7), op_vars = make_vars(7);
  const auto pass = fused_l2_and_norm(weights_of(fused_vars), fused_vars, decay);
  ASSERT_TRUE(pass.has_value());
  const auto sums = add_l2_regularization_gradients(weights_of(op_vars), decay);
  const double norm = gradient_global_norm_tensor(op_vars).item<double>();

  ASSERT_EQ(pass->l2_sums.size(), sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    const double want = sums[i].item<double>();
    EXPECT_NEAR(pass->l2_sums[i].item<double>(), want, 1e-5 * want) << "weight " << i;
  }
  // Float sums over 2,048 values a lane, then float64: within 1e-6 of the
  // float64 norm. LibTorch's per-tensor float norms are looser (~1e-4 here).
  const double exact = exact_norm(op_vars);
  EXPECT_NEAR(pass->norm.item<double>(), exact, 1e-6 * exact);
  EXPECT_NEAR(norm, exact, 1e-3 * exact);
  EXPECT_EQ(pass->norm.scalar_type(), torch::kFloat64);
  std::cout << "norm: float64 " << exact << ", fused " << pass->norm.item<double>()
            << ", LibTorch's operators " << norm << "\n";
  int64_t differing = 0, total = 0;
  for (size_t i = 0; i < op_vars.size(); ++i) {
    const auto& a = fused_vars[i].var.grad();
    const auto& b = op_vars[i].var.grad();
    // decay * w went in (w ~ N(0, 1) against gradients ~ 0.01): one
    // rounding apart at most, where LibTorch rounds the product apart.
    EXPECT_TRUE(torch::allclose(a, b, /*rtol=*/1e-6, /*atol=*/1e-9)) << fused_vars[i].name;
    differing += a.ne(b).sum().item<int64_t>();
    total += a.numel();
  }
  // Reported, not asserted: whether the rounding matched bit for bit here.
  std::cout << "fused L2 gradients differing from add_'s in the last bit: " << differing << " of "
            << total << "\n";
}

TEST(FusedGradients, SameBitsAtAnyThreadCount) {
  const int threads = at::get_num_threads();
  auto one = make_vars(3), two = make_vars(3);
  at::set_num_threads(1);
  const auto a = fused_l2_and_norm(weights_of(one), one, 1e-3);
  at::set_num_threads(std::max(2, threads));
  const auto b = fused_l2_and_norm(weights_of(two), two, 1e-3);
  at::set_num_threads(threads);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->norm.item<double>(), b->norm.item<double>());
  for (size_t i = 0; i < a->l2_sums.size(); ++i) {
    EXPECT_EQ(a->l2_sums[i].item<double>(), b->l2_sums[i].item<double>());
  }
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(torch::equal(one[i].var.grad(), two[i].var.grad())) << one[i].name;
  }
}

TEST(FusedGradients, NormOnlyWithoutDecayAndNonFiniteShows) {
  auto vars = make_vars(5);
  const double want = exact_norm(vars);
  const auto before = grads_of(vars);
  auto pass = fused_l2_and_norm({}, vars, 0.0);
  ASSERT_TRUE(pass.has_value());
  EXPECT_TRUE(pass->l2_sums.empty());
  EXPECT_NEAR(pass->norm.item<double>(), want, 1e-6 * want);
  for (size_t i = 0; i < vars.size(); ++i) EXPECT_TRUE(torch::equal(vars[i].var.grad(), before[i]));

  vars[4].var.mutable_grad()[100][7] = std::numeric_limits<float>::infinity();
  pass = fused_l2_and_norm(weights_of(vars), vars, 1e-3);
  ASSERT_TRUE(pass.has_value());
  EXPECT_FALSE(std::isfinite(pass->norm.item<double>()));
  vars[6].var.mutable_grad()[1026][9] = std::numeric_limits<float>::quiet_NaN();  // a tail element
  pass = fused_l2_and_norm(weights_of(vars), vars, 1e-3);
  ASSERT_TRUE(pass.has_value());
  EXPECT_TRUE(std::isnan(pass->norm.item<double>()));
}

TEST(FusedGradients, StandsAsideWhereItDoesNotApplyAndTouchesNothing) {
  // A float64 gradient, a regularized weight without a gradient, a weight
  // that is no variable, a non-contiguous gradient: nullopt, gradients kept.
  auto vars = make_vars(9);
  const auto before = grads_of(vars);
  auto check_untouched = [&] {
    for (size_t i = 0; i < vars.size(); ++i) {
      EXPECT_TRUE(torch::equal(vars[i].var.grad(), before[i])) << vars[i].name;
    }
  };
  auto f64 = torch::randn({4}, torch::kFloat64).requires_grad_();
  f64.mutable_grad() = torch::ones({4}, torch::kFloat64);
  auto with_f64 = vars;
  with_f64.push_back({"f64", f64});
  EXPECT_FALSE(fused_l2_and_norm(weights_of(vars), with_f64, 1e-3).has_value());
  check_untouched();

  auto no_grad = torch::randn({8}).requires_grad_();
  auto with_no_grad = vars;
  with_no_grad.push_back({"no_grad", no_grad});
  auto regularized = weights_of(vars);
  regularized.push_back(no_grad);
  EXPECT_FALSE(fused_l2_and_norm(regularized, with_no_grad, 1e-3).has_value());
  check_untouched();

  auto stranger = torch::randn({8}).requires_grad_();
  regularized = weights_of(vars);
  regularized.push_back(stranger);
  EXPECT_FALSE(fused_l2_and_norm(regularized, vars, 1e-3).has_value());
  check_untouched();

  auto t = torch::randn({16, 8}).requires_grad_();
  t.mutable_grad() = torch::randn({8, 16}).t();
  auto with_strided = vars;
  with_strided.push_back({"strided", t});
  EXPECT_FALSE(fused_l2_and_norm(weights_of(vars), with_strided, 1e-3).has_value());
  check_untouched();
}

}  // namespace
}  // namespace fastnn::train
