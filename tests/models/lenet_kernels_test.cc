// The fused LeNet kernels against LibTorch's own conv2d / relu / max_pool2d:
// values, gradients, ties, and the whole model's step.
#include "models/lenet_kernels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_factory.h"
#include "src/compat/torch_compat.h"
#include "tests/models/lenet_reference.h"

namespace fastnn::models {
namespace {

namespace F = torch::nn::functional;

struct Grads {
  torch::Tensor out, dw, db;
};

template <typename Block>
Grads run(Block block, const torch::Tensor& x, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& upstream) {
  auto w = w0.clone().requires_grad_(true);
  auto b = b0.clone().requires_grad_(true);
  auto out = block(x, w, b);
  (out * upstream).sum().backward();
  return {out.detach(), w.grad(), b.grad()};
}

// A batch of `n` random 28x28 images, the first block's parameters and an
// upstream gradient for its pooled output.
struct Case {
  torch::Tensor x, w, b, up;
};
Case random_case(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::rand({n, 1, 28, 28}), torch::randn({32, 1, 5, 5}) * 0.2, torch::randn({32}) * 0.1,
          torch::randn({n, 32, 14, 14})};
}

TEST(LeNetKernels, ConvBlockMatchesLibTorch) {
  const Case k = random_case(5, 3);
  const Grads ref = run(reference_block, k.x, k.w, k.b, k.up);
  const Grads got = run(conv5x5_relu_maxpool, k.x, k.w, k.b, k.up);
  ASSERT_EQ(got.out.sizes(), ref.out.sizes());
  EXPECT_TRUE(torch::allclose(got.out, ref.out, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(got.dw, ref.dw, 1e-4, 1e-4)) << (got.dw - ref.dw).abs().max();
  EXPECT_TRUE(torch::allclose(got.db, ref.db, 1e-4, 1e-4)) << (got.db - ref.db).abs().max();
  // Not vacuous: the upstream gradient reaches both parameters.
  EXPECT_GT(ref.dw.abs().max().item<float>(), 0.1f);
}

TEST(LeNetKernels, ConvBlockTiesFollowLibTorch) {
  // A blank image: every window holds four equal values (the bias), so the
  // pool's choice among ties decides where the gradient goes, and the
  // negative biases' channels pass none.
  const auto x = torch::zeros({2, 1, 8, 12});
  const auto w = torch::randn({16, 1, 5, 5});
  const auto b = torch::linspace(-1, 1, 16);
  const auto up = torch::randn({2, 16, 4, 6});
  const Grads ref = run(reference_block, x, w, b, up);
  const Grads got = run(conv5x5_relu_maxpool, x, w, b, up);
  EXPECT_TRUE(torch::equal(got.out, ref.out));
  EXPECT_TRUE(torch::allclose(got.db, ref.db, 1e-5, 1e-5)) << got.db << ref.db;
  EXPECT_TRUE(torch::equal(got.dw, ref.dw));  // zero input: no weight gradient
  EXPECT_EQ(got.db.index({torch::indexing::Slice(0, 8)}).abs().max().item<float>(), 0.f);
}

TEST(LeNetKernels, ReluPoolIsExactAndChannelsLast) {
  torch::manual_seed(4);
  // Values on a coarse grid: many ties, zeros and negatives.
  const auto x0 = torch::randint(-3, 4, {3, 16, 14, 10}).to(torch::kFloat);
  const auto up = torch::randn({3, 16, 7, 5});
  auto xa = x0.clone().requires_grad_(true);
  auto xb = x0.clone().requires_grad_(true);
  auto ref = torch::max_pool2d(torch::relu(xa), 2, 2);
  auto got = relu_maxpool_channels_last(xb);
  EXPECT_TRUE(torch::equal(got, ref));
  EXPECT_TRUE(got.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(got.permute({0, 2, 3, 1}).is_contiguous());  // TF-slim's flatten is a view
  (ref * up).sum().backward();
  (got.permute({0, 2, 3, 1}).flatten(1) * up.permute({0, 2, 3, 1}).flatten(1)).sum().backward();
  EXPECT_TRUE(torch::equal(xb.grad(), xa.grad()));
  EXPECT_GT(xa.grad().abs().sum().item<float>(), 0.f);
}

TEST(LeNetKernels, GradientsAreTheSameOnEveryRun) {
  const Case k = random_case(16, 5);
  const Grads a = run(conv5x5_relu_maxpool, k.x, k.w, k.b, k.up);
  const Grads c = run(conv5x5_relu_maxpool, k.x, k.w, k.b, k.up);
  EXPECT_TRUE(torch::equal(a.dw, c.dw));
  EXPECT_TRUE(torch::equal(a.db, c.db));
}

TEST(LeNetKernels, ServeOnlyPlainCpuFloat) {
  EXPECT_TRUE(fused_kernels_apply(torch::zeros({1, 1, 28, 28})));
  EXPECT_FALSE(fused_kernels_apply(torch::zeros({1, 1, 28, 28}, torch::kDouble)));
  compat::set_cpu_autocast(true);
  EXPECT_FALSE(fused_kernels_apply(torch::zeros({1, 1, 28, 28})));
  compat::set_cpu_autocast(false);
  EXPECT_THROW(conv5x5_relu_maxpool(torch::zeros({1, 1, 27, 28}), torch::zeros({32, 1, 5, 5}),
                                    torch::zeros({32})),
               c10::Error);
  EXPECT_THROW(conv5x5_relu_maxpool(torch::zeros({1, 1, 28, 28}), torch::zeros({12, 1, 5, 5}),
                                    torch::zeros({12})),
               c10::Error);
}

TEST(LeNetKernels, TheModelsStepMatchesTheUnfusedLayers) {
  torch::manual_seed(6);
  ModelOptions o;
  o.num_classes = 10;
  o.in_channels = 1;
  o.dropout_keep_prob = 1.0;
  auto m = find_model("lenet").create(o);
  const auto x = torch::rand({8, 1, 28, 28});
  const auto y = torch::randint(0, 10, {8}, torch::kInt64);
  auto params = m->named_parameters();
  // The same network by LibTorch's layers, on copies of the parameters.
  std::map<std::string, torch::Tensor> p;
  for (const auto& kv : params) p[kv.key()] = kv.value().detach().clone().requires_grad_(true);
  auto h = reference_block(x, p["conv1.weight"], p["conv1.bias"]);
  h = torch::max_pool2d(
      torch::relu(
          F::conv2d(h, p["conv2.weight"], F::Conv2dFuncOptions().bias(p["conv2.bias"]).padding(2))),
      2, 2);
  h = torch::relu(F::linear(h.permute({0, 2, 3, 1}).flatten(1), p["fc3.weight"], p["fc3.bias"]));
  const auto ref_logits = F::linear(h, p["fc4.weight"], p["fc4.bias"]);
  F::cross_entropy(ref_logits, y).backward();

  const auto logits = m->forward(x).logits;
  F::cross_entropy(logits, y).backward();
  EXPECT_TRUE(torch::allclose(logits, ref_logits, 1e-4, 1e-5));
  for (const auto& kv : params) {
    const auto& g = kv.value().grad();
    const auto& r = p[kv.key()].grad();
    ASSERT_TRUE(g.defined()) << kv.key();
    EXPECT_TRUE(torch::allclose(g, r, 1e-3, 1e-5)) << kv.key() << " " << (g - r).abs().max();
  }
}

}  // namespace
}  // namespace fastnn::models
