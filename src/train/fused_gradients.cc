#include "src/train/fused_gradients.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "src/compat/vector_clones.h"
#include "src/kernels/lanes.h"

namespace fastnn::train {
namespace {

// Elements per block: each block's sums are one partial, and the partials
// are added in block order, so the result does not depend on the threads.
constexpr int64_t kBlock = 16384;
using kernels::kLanes;

bool servable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

// One block: g += decay * w (w may be null: the norm only), and the sums of
// g^2 (after the addition) and w^2, in 8 float lanes over the block.
template <bool kWithWeight>
[[gnu::always_inline]] inline void block_sums(float* g, const float* w, int64_t n, float decay,
                                              double* g_sq, double* w_sq) {
  float ag[kLanes] = {0}, aw[kLanes] = {0};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      if constexpr (kWithWeight) {
        const float wv = w[i + l];
        const float gv = g[i + l] + wv * decay;
        g[i + l] = gv;
        ag[l] += gv * gv;
        aw[l] += wv * wv;
      } else {
        ag[l] += g[i + l] * g[i + l];
      }
    }
  }
  double sg = 0, sw = 0;
  for (int l = 0; l < kLanes; ++l) {
    sg += ag[l];
    sw += aw[l];
  }
  for (; i < n; ++i) {
    if constexpr (kWithWeight) {
      g[i] = g[i] + w[i] * decay;
      sw += static_cast<double>(w[i]) * w[i];
    }
    sg += static_cast<double>(g[i]) * g[i];
  }
  *g_sq = sg;
  *w_sq = sw;
}

// One clone per CPU (FASTNN_VECTOR_CLONES): on an AVX2 CPU, g + w * decay
// is one fused multiply-add, rounded once, as LibTorch's AVX2
// add_(other, alpha) rounds it.
FASTNN_VECTOR_CLONES
void block_pass(float* g, const float* w, int64_t n, float decay, double* g_sq, double* w_sq) {
  if (w != nullptr) {
    block_sums<true>(g, w, n, decay, g_sq, w_sq);
  } else {
    block_sums<false>(g, w, n, decay, g_sq, w_sq);
  }
}

// The pass over one gradient (and its weight): (sum g^2, sum w^2).
std::pair<double, double> tensor_pass(const torch::Tensor& grad, const torch::Tensor* weight,
                                      float decay) {
  const int64_t n = grad.numel();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> g_sq(blocks, 0.0), w_sq(blocks, 0.0);
  float* g = grad.data_ptr<float>();
  const float* w = weight ? weight->data_ptr<float>() : nullptr;
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t at = b * kBlock, len = std::min(kBlock, n - at);
      block_pass(g + at, w ? w + at : nullptr, len, decay, &g_sq[b], &w_sq[b]);
    }
  });
  double sg = 0, sw = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    sg += g_sq[b];
    sw += w_sq[b];
  }
  return {sg, sw};
}

}  // namespace

std::optional<GradientPass> fused_l2_and_norm(const std::vector<torch::Tensor>& regularized,
                                              const std::vector<optim::Variable>& vars,
                                              double decay) {
  RECORD_FUNCTION("fastnn::fused_l2_and_norm", std::vector<c10::IValue>());
  // Which variable each regularized weight is (the same tensor, by identity).
  std::unordered_map<const void*, size_t> index;
  for (size_t i = 0; i < vars.size(); ++i) {
    const auto& g = vars[i].var.grad();
    if (!g.defined()) continue;
    if (!servable(g) || !servable(vars[i].var)) return std::nullopt;
    index.emplace(vars[i].var.unsafeGetTensorImpl(), i);
  }
  std::vector<const torch::Tensor*> weight_of(vars.size(), nullptr);
  for (const auto& w : regularized) {
    const auto it = index.find(w.unsafeGetTensorImpl());
    if (!w.requires_grad() || it == index.end() || !servable(w)) return std::nullopt;
    weight_of[it->second] = &w;
  }
  const float d = static_cast<float>(decay);
  double total = 0;
  std::vector<double> l2_of(vars.size(), 0.0);
  for (size_t i = 0; i < vars.size(); ++i) {
    const auto& g = vars[i].var.grad();
    if (!g.defined()) continue;
    const auto [g_sq, w_sq] = tensor_pass(g, weight_of[i], d);
    total += g_sq;
    l2_of[i] = w_sq;
  }
  GradientPass r;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (const auto& w : regularized) {
    const size_t i = index.at(w.unsafeGetTensorImpl());
    r.l2_sums.push_back(torch::full({}, l2_of[i], f64));
  }
  r.norm = torch::full({}, std::sqrt(total), f64);
  return r;
}

}  // namespace fastnn::train
