// LeNet's second block with the sparse backward pass
// (models/lenet_sparse_backward.cc) against LibTorch's conv2d / relu /
// max_pool2d and their autograd: values, the three gradients, ties.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/lenet_kernels.h"
#include "tests/models/lenet_reference.h"

namespace fastnn::models {
namespace {

namespace F = torch::nn::functional;

struct Grads {
  torch::Tensor out, dx, dw, db;
};

// The block's output and gradients; `seed` is the generator's state when the
// block runs (the dropout masks).
template <typename Block>
Grads run(Block block, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& upstream, uint64_t seed = 0, bool input_grad = true) {
  auto x = x0.clone().requires_grad_(input_grad);
  auto w = w0.clone().requires_grad_(true);
  auto b = b0.clone().requires_grad_(true);
  torch::manual_seed(seed);
  auto out = block(x, w, b);
  (out * upstream).sum().backward();
  return {out.detach(), input_grad ? x.grad() : torch::Tensor(), w.grad(), b.grad()};
}

// Largest difference relative to the reference's largest magnitude.
float relative_error(const torch::Tensor& got, const torch::Tensor& ref) {
  return ((got - ref).abs().max() / ref.abs().max()).item<float>();
}

// The same forward values, gradients to float rounding (sums in another order).
void expect_same(const Grads& got, const Grads& ref) {
  ASSERT_EQ(got.out.sizes(), ref.out.sizes());
  EXPECT_TRUE(torch::equal(got.out, ref.out)) << (got.out - ref.out).abs().max();
  EXPECT_LT(relative_error(got.dw, ref.dw), 1e-5);
  EXPECT_LT(relative_error(got.db, ref.db), 1e-5);
  if (ref.dx.defined()) {
    ASSERT_TRUE(got.dx.defined());
    EXPECT_LT(relative_error(got.dx, ref.dx), 1e-5);
    // Not vacuous: the upstream gradient reaches the input.
    EXPECT_GT(ref.dx.abs().max().item<float>(), 0.01f);
  }
  EXPECT_GT(ref.dw.abs().max().item<float>(), 0.01f);
}

TEST(LeNetSparseBackward, MatchesLibTorchOnLeNetsShapes) {
  torch::manual_seed(11);
  // The first block's output: non-negative, a quarter of it zero.
  const auto x = torch::relu(torch::randn({6, 32, 14, 14}) + 0.7);
  const auto w = torch::randn({64, 32, 5, 5}) * 0.05;
  const auto b = torch::randn({64}) * 0.1;
  const auto up = torch::randn({6, 64, 7, 7});
  const Grads ref = run(reference_block, x, w, b, up);
  const Grads got = run(conv5x5_relu_maxpool_channels_last, x, w, b, up);
  expect_same(got, ref);
  EXPECT_TRUE(got.out.is_contiguous(at::MemoryFormat::ChannelsLast));
}

TEST(LeNetSparseBackward, MatchesLibTorchOnOtherShapes) {
  torch::manual_seed(12);
  // 16 input channels, 8 outputs, a wide odd-sized batch of small images;
  // an upstream gradient arriving contiguous NCHW (not channels-last).
  const auto x = torch::randn({3, 16, 6, 10});
  const auto w = torch::randn({8, 16, 5, 5}) * 0.1;
  const auto b = torch::randn({8}) * 0.1;
  const auto up = torch::randn({3, 8, 3, 5});
  expect_same(run(conv5x5_relu_maxpool_channels_last, x, w, b, up),
              run(reference_block, x, w, b, up));
}

TEST(LeNetSparseBackward, TiesAndNegativeChannelsFollowLibTorch) {
  // A zero input: every window holds four equal values (the bias), so the
  // pool's choice among ties decides where the gradient goes, and the
  // channels of negative bias pass none.
  const auto x = torch::zeros({2, 16, 8, 12});
  const auto w = torch::randn({16, 16, 5, 5});
  const auto b = torch::linspace(-1, 1, 16);
  const auto up = torch::randn({2, 16, 4, 6});
  const Grads ref = run(reference_block, x, w, b, up);
  const Grads got = run(conv5x5_relu_maxpool_channels_last, x, w, b, up);
  EXPECT_TRUE(torch::equal(got.out, ref.out));
  EXPECT_TRUE(torch::equal(got.dw, ref.dw));  // zero input: no weight gradient
  EXPECT_LT(relative_error(got.db, ref.db), 1e-6);
  EXPECT_LT(relative_error(got.dx, ref.dx), 1e-5);
  EXPECT_EQ(got.db.index({torch::indexing::Slice(0, 8)}).abs().max().item<float>(), 0.f);
}

TEST(LeNetSparseBackward, WithoutAnInputGradientAndTheSameOnEveryRun) {
  torch::manual_seed(13);
  const auto x = torch::rand({9, 32, 14, 14});
  const auto w = torch::randn({64, 32, 5, 5}) * 0.05;
  const auto b = torch::zeros({64});
  const auto up = torch::randn({9, 64, 7, 7});
  const Grads a = run(conv5x5_relu_maxpool_channels_last, x, w, b, up, 0, false);
  const Grads c = run(conv5x5_relu_maxpool_channels_last, x, w, b, up, 0, false);
  EXPECT_FALSE(a.dx.defined());
  EXPECT_TRUE(torch::equal(a.dw, c.dw));
  EXPECT_TRUE(torch::equal(a.db, c.db));
  EXPECT_LT(relative_error(a.dw, run(reference_block, x, w, b, up).dw), 1e-5);
}

TEST(LeNetSparseBackward, RefusesShapesItCannotServe) {
  EXPECT_THROW(conv5x5_relu_maxpool_channels_last(torch::zeros({1, 8, 14, 14}),
                                                  torch::zeros({64, 8, 5, 5}), torch::zeros({64})),
               c10::Error);
  EXPECT_THROW(conv5x5_relu_maxpool_channels_last(torch::zeros({1, 32, 14, 14}),
                                                  torch::zeros({60, 32, 5, 5}), torch::zeros({60})),
               c10::Error);
  EXPECT_THROW(conv5x5_relu_maxpool_channels_last(torch::zeros({1, 32, 13, 14}),
                                                  torch::zeros({64, 32, 5, 5}), torch::zeros({64})),
               c10::Error);
  EXPECT_THROW(conv5x5_relu_maxpool_channels_last(torch::zeros({1, 32, 14, 14}),
                                                  torch::zeros({64, 32, 3, 3}), torch::zeros({64})),
               c10::Error);
}

// fc3 -> ReLU -> dropout (models/lenet_sparse_linear.cc) against LibTorch's
// linear, relu and dropout, drawing from the same generator state.
struct LinearCase {
  torch::Tensor x, w, b, up;
};
LinearCase linear_case(int64_t n, int64_t k, int64_t m, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::relu(torch::randn({n, k})), torch::randn({m, k}) * 0.05, torch::randn({m}) * 0.1,
          torch::randn({n, m})};
}

TEST(LeNetSparseLinear, MatchesLibTorchsDropoutWithTheSameMasks) {
  for (const double keep : {0.5, 0.7, 1.0}) {
    SCOPED_TRACE(keep);
    // fc3's shapes at a small batch; 3136 columns: 49 spans of 64.
    const LinearCase k = linear_case(12, 3136, 1024, 21);
    const auto ours = [&](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
      return linear_relu_dropout(x, w, b, keep);
    };
    const auto ref = [&](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
      return torch::dropout(torch::relu(F::linear(x, w, b)), 1.0 - keep, true);
    };
    const Grads r = run(ref, k.x, k.w, k.b, k.up, 22);
    const Grads g = run(ours, k.x, k.w, k.b, k.up, 22);
    expect_same(g, r);
    // Not vacuous: dropout and ReLU zeroed some outputs, and kept some.
    const double kept = (r.out > 0).to(torch::kFloat).mean().item<double>();
    EXPECT_GT(kept, 0.1);
    EXPECT_LT(kept, 0.9);
  }
}

TEST(LeNetSparseLinear, OtherWidthsAndNoInputGradient) {
  // 24 columns: no full span of 64, three of 8; 5 units.
  const LinearCase k = linear_case(7, 24, 5, 23);
  const auto ours = [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    return linear_relu_dropout(x, w, b, 0.5);
  };
  const auto ref = [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    return torch::dropout(torch::relu(F::linear(x, w, b)), 0.5, true);
  };
  expect_same(run(ours, k.x, k.w, k.b, k.up, 24), run(ref, k.x, k.w, k.b, k.up, 24));
  const Grads no_dx = run(ours, k.x, k.w, k.b, k.up, 24, false);
  EXPECT_FALSE(no_dx.dx.defined());
  EXPECT_LT(relative_error(no_dx.dw, run(ref, k.x, k.w, k.b, k.up, 24).dw), 1e-5);
}

TEST(LeNetSparseLinear, RefusesWhatItCannotServe) {
  EXPECT_THROW(
      linear_relu_dropout(torch::zeros({2, 12}), torch::zeros({4, 12}), torch::zeros({4}), 0.5),
      c10::Error);
  EXPECT_THROW(
      linear_relu_dropout(torch::zeros({2, 16}), torch::zeros({4, 8}), torch::zeros({4}), 0.5),
      c10::Error);
  EXPECT_THROW(
      linear_relu_dropout(torch::zeros({2, 16}), torch::zeros({4, 16}), torch::zeros({4}), 0.0),
      c10::Error);
}

}  // namespace
}  // namespace fastnn::models
