// The CPU kernels (src/kernels/kernels.h) against LibTorch's own conv2d /
// relu / max_pool2d / linear / dropout and their autograd: values, the three
// gradients, ties, odd sizes, kernel sizes and paddings, and the networks
// that use them against the same networks on LibTorch's operators.
#include "src/kernels/kernels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/model_factory.h"
#include "src/compat/torch_compat.h"

namespace fastnn::kernels {
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

// Forward values to float rounding (the direct convolution sums in another
// order than oneDNN), gradients likewise.
void expect_same(const Grads& got, const Grads& ref) {
  ASSERT_EQ(got.out.sizes(), ref.out.sizes());
  EXPECT_LT(relative_error(got.out, ref.out), 1e-5);
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

struct Block {
  int64_t n, cin, c, h, w, kh, kw, ph, pw;
};

void check_block(const Block& s, bool input_grad, uint64_t seed) {
  SCOPED_TRACE("cin " + std::to_string(s.cin) + " c " + std::to_string(s.c) + " " +
               std::to_string(s.h) + "x" + std::to_string(s.w) + " kernel " + std::to_string(s.kh) +
               "x" + std::to_string(s.kw) + " pad " + std::to_string(s.ph) + "," +
               std::to_string(s.pw) + " dx " + std::to_string(input_grad));
  torch::manual_seed(seed);
  const auto x = torch::relu(torch::randn({s.n, s.cin, s.h, s.w}) + 0.5);
  const auto w = torch::randn({s.c, s.cin, s.kh, s.kw}) * 0.1;
  const auto b = torch::randn({s.c}) * 0.1;
  const int64_t ho = (s.h + 2 * s.ph - s.kh + 1) / 2, wo = (s.w + 2 * s.pw - s.kw + 1) / 2;
  const auto up = torch::randn({s.n, s.c, ho, wo});
  const auto ours = [&](const torch::Tensor& xx, const torch::Tensor& ww, const torch::Tensor& bb) {
    return conv_relu_max_pool(xx, ww, bb, s.ph, s.pw, c10::MemoryFormat::Contiguous);
  };
  const auto ref = [&](const torch::Tensor& xx, const torch::Tensor& ww, const torch::Tensor& bb) {
    return torch::max_pool2d(
        torch::relu(F::conv2d(xx, ww, F::Conv2dFuncOptions().bias(bb).padding({s.ph, s.pw}))), 2,
        2);
  };
  expect_same(run(ours, x, w, b, up, 0, input_grad), run(ref, x, w, b, up, 0, input_grad));
}

TEST(ConvReluMaxPool, MatchesLibTorchOnTheNetworksShapes) {
  check_block({5, 1, 32, 28, 28, 5, 5, 2, 2}, false, 3);   // lenet conv1: the direct path
  check_block({4, 32, 64, 14, 14, 5, 5, 2, 2}, true, 4);   // lenet conv2
  check_block({3, 3, 64, 32, 32, 5, 5, 2, 2}, false, 5);   // cifarnet conv1
  check_block({2, 64, 64, 27, 27, 5, 5, 0, 0}, true, 6);   // overfeat conv2 (VALID)
  check_block({2, 64, 128, 12, 12, 3, 3, 1, 1}, true, 7);  // vgg's and overfeat's 3x3 SAME
}

TEST(ConvReluMaxPool, AnyKernelPaddingAndOddSizes) {
  check_block({2, 1, 8, 9, 11, 3, 7, 1, 3}, false, 8);     // direct, odd output
  check_block({2, 1, 8, 9, 11, 3, 7, 1, 3}, true, 9);      // one channel with dx: sparse
  check_block({2, 5, 16, 13, 10, 1, 1, 0, 0}, true, 10);   // 1x1, channels padded to 16
  check_block({1, 20, 8, 15, 15, 11, 6, 5, 2}, true, 11);  // taps beyond one chunk of 5
}

TEST(ConvReluMaxPool, TiesAndNegativeChannelsFollowLibTorch) {
  for (const int64_t cin : {1, 16}) {
    SCOPED_TRACE(cin);
    // A blank image: every window holds four equal values (the bias), so the
    // pool's choice among ties decides where the gradient goes, and the
    // negative biases' channels pass none.
    const auto x = torch::zeros({2, cin, 8, 12});
    const auto w = torch::randn({16, cin, 5, 5});
    const auto b = torch::linspace(-1, 1, 16);
    const auto up = torch::randn({2, 16, 4, 6});
    const auto ours = [](const torch::Tensor& xx, const torch::Tensor& ww,
                         const torch::Tensor& bb) {
      return conv_relu_max_pool(xx, ww, bb, 2, 2, c10::MemoryFormat::Contiguous);
    };
    const auto ref = [](const torch::Tensor& xx, const torch::Tensor& ww, const torch::Tensor& bb) {
      return torch::max_pool2d(
          torch::relu(F::conv2d(xx, ww, F::Conv2dFuncOptions().bias(bb).padding(2))), 2, 2);
    };
    const Grads got = run(ours, x, w, b, up, 0, cin > 1);
    const Grads want = run(ref, x, w, b, up, 0, cin > 1);
    EXPECT_TRUE(torch::equal(got.out, want.out));
    EXPECT_TRUE(torch::allclose(got.db, want.db, 1e-5, 1e-5)) << got.db << want.db;
    EXPECT_TRUE(torch::equal(got.dw, want.dw));  // zero input: no weight gradient
    EXPECT_EQ(got.db.index({torch::indexing::Slice(0, 8)}).abs().max().item<float>(), 0.f);
    if (cin > 1) EXPECT_LT(relative_error(got.dx, want.dx), 1e-5);
  }
}

TEST(ConvReluMaxPool, ChannelsLastOutputAndTheSameOnEveryRun) {
  torch::manual_seed(12);
  const auto x = torch::relu(torch::randn({16, 32, 14, 14}));
  const auto w = torch::randn({64, 32, 5, 5}) * 0.05;
  const auto b = torch::randn({64}) * 0.1;
  const auto up = torch::randn({16, 64, 7, 7});
  const auto cl = [](const torch::Tensor& xx, const torch::Tensor& ww, const torch::Tensor& bb) {
    return conv_relu_max_pool(xx, ww, bb, 2, 2, c10::MemoryFormat::ChannelsLast);
  };
  const Grads a = run(cl, x, w, b, up);
  const Grads c = run(cl, x, w, b, up);
  EXPECT_TRUE(a.out.is_contiguous(c10::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(a.out.permute({0, 2, 3, 1}).is_contiguous());  // TF-slim's flatten is a view
  EXPECT_TRUE(torch::equal(a.dw, c.dw));
  EXPECT_TRUE(torch::equal(a.db, c.db));
  EXPECT_TRUE(torch::equal(a.dx, c.dx));
}

TEST(ConvReluMaxPool, ServesOnlyPlainCpuFloat) {
  const auto x = torch::zeros({1, 1, 28, 28});
  const auto w = torch::zeros({32, 1, 5, 5});
  EXPECT_TRUE(conv_relu_max_pool_serves(x, w, 2, 2));
  EXPECT_FALSE(conv_relu_max_pool_serves(x.to(torch::kDouble), w, 2, 2));
  EXPECT_FALSE(conv_relu_max_pool_serves(x, torch::zeros({12, 1, 5, 5}), 2, 2));  // C % 8
  EXPECT_FALSE(conv_relu_max_pool_serves(x, torch::zeros({32, 3, 5, 5}), 2, 2));  // Cin
  EXPECT_FALSE(conv_relu_max_pool_serves(torch::zeros({1, 1, 4, 4}), w, 0, 0));   // no 2x2 output
  compat::set_cpu_autocast(true);
  EXPECT_FALSE(serve(x));
  compat::set_cpu_autocast(false);
  EXPECT_THROW(conv_relu_max_pool(x, torch::zeros({12, 1, 5, 5}), torch::zeros({12}), 2, 2,
                                  c10::MemoryFormat::Contiguous),
               c10::Error);
}

struct LinearCase {
  torch::Tensor x, w, b, up;
};
LinearCase linear_case(int64_t n, int64_t k, int64_t m, uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::relu(torch::randn({n, k})), torch::randn({m, k}) * 0.05, torch::randn({m}) * 0.1,
          torch::randn({n, m})};
}

TEST(LinearReluDropout, MatchesLibTorchsDropoutWithTheSameMasks) {
  for (const double keep : {0.5, 0.7, 1.0}) {
    SCOPED_TRACE(keep);
    // lenet's fc3 at a small batch; 3136 columns: 49 spans of 64.
    const LinearCase k = linear_case(12, 3136, 1024, 21);
    const auto ours = [&](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
      return linear_relu_dropout(x, w, b, keep);
    };
    const auto ref = [&](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
      return torch::dropout(torch::relu(F::linear(x, w, b)), 1.0 - keep, true);
    };
    const Grads r = run(ref, k.x, k.w, k.b, k.up, 22);
    const Grads g = run(ours, k.x, k.w, k.b, k.up, 22);
    EXPECT_TRUE(torch::equal(g.out, r.out)) << (g.out - r.out).abs().max();
    expect_same(g, r);
    // Not vacuous: dropout and ReLU zeroed some outputs, and kept some.
    const double kept = (r.out > 0).to(torch::kFloat).mean().item<double>();
    EXPECT_GT(kept, 0.1);
    EXPECT_LT(kept, 0.9);
  }
}

TEST(LinearReluDropout, OtherWidthsAndNoInputGradient) {
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

TEST(LinearReluDropout, RefusesWhatItCannotServe) {
  EXPECT_FALSE(linear_relu_dropout_serves(torch::zeros({2, 12})));
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

// A network's training step with the kernels against the same network,
// same parameters and input, on LibTorch's operators (fused_kernels=false):
// logits and every gradient to float rounding.
void expect_network_matches(const std::string& name, int64_t channels, int64_t size,
                            int64_t batch) {
  SCOPED_TRACE(name);
  models::ModelOptions o;
  o.num_classes = 10;
  o.in_channels = channels;
  o.dropout_keep_prob = 1.0;
  o.image_size = size;
  torch::manual_seed(6);
  auto fused = models::find_model(name).create(o);
  o.fused_kernels = false;
  auto plain = models::find_model(name).create(o);
  {
    torch::NoGradGuard no_grad;
    auto from = fused->named_parameters();
    for (auto& kv : plain->named_parameters()) kv.value().copy_(from[kv.key()]);
  }
  fused->train();
  plain->train();
  const auto x = torch::rand({batch, channels, size, size});
  const auto y = torch::randint(0, 10, {batch}, torch::kInt64);
  const auto a = fused->forward(x).logits;
  const auto b = plain->forward(x).logits;
  F::cross_entropy(a, y).backward();
  F::cross_entropy(b, y).backward();
  EXPECT_LT(relative_error(a, b), 1e-4);
  auto want = plain->named_parameters();
  int compared = 0;
  for (const auto& kv : fused->named_parameters()) {
    const auto& g = kv.value().grad();
    const auto& r = want[kv.key()].grad();
    ASSERT_TRUE(g.defined() && r.defined()) << kv.key();
    if (r.abs().max().item<float>() == 0.f) continue;
    EXPECT_LT(relative_error(g, r), 1e-3) << kv.key();
    ++compared;
  }
  EXPECT_GT(compared, 3);
}

TEST(KernelNetworks, LeNetAndCifarNetMatchTheirUnfusedLayers) {
  expect_network_matches("lenet", 1, 28, 8);
  expect_network_matches("cifarnet", 3, 32, 4);
}

TEST(KernelNetworks, OverFeatAndVggMatchTheirUnfusedLayers) {
  expect_network_matches("overfeat", 3, 231, 1);
  expect_network_matches("vgg_a", 3, 224, 1);
}

}  // namespace
}  // namespace fastnn::kernels
