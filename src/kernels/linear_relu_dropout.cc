// fully connected -> ReLU -> dropout during training, with a backward pass
// that computes only what is not zero (src/kernels/kernels.h).
//
// ReLU and dropout zero most of the layer's output gradient (dropout alone
// half of it at keep_prob 0.5): LibTorch's backward multiplies the zeros
// too (two GEMMs of the full size). Here, with dz the gradient at the
// pre-activation:
//   dW[j][:] = sum over kept b of dz[b][j] * x[b][:]
//   dx[b][:] = sum over kept j of dz[b][j] * W[j][:]
// each sum in registers over a span of columns. A value is kept where the
// block's output is positive, which is where ReLU and dropout both pass the
// gradient (a NaN output passes none, as LibTorch's threshold_backward).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/compat/vector_clones.h"
#include "src/kernels/kernels.h"
#include "src/kernels/lanes.h"

namespace fastnn::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Columns summed together: eight registers.
constexpr int kSpanLanes = 8;

// out[r][c0 .. c0 + V * 8) = sum over kept k of kept[k].g * m[kept[k].at][same columns].
template <int V>
[[gnu::always_inline]] inline void sum_rows(const Kept* kept, int64_t count, const float* m,
                                            int64_t cols, int64_t c0, float* out) {
  Lanes sums[V] = {};
  for (int64_t k = 0; k < count; ++k) {
    const float* p = m + kept[k].at * cols + c0;
    const float g = kept[k].g;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) sums[v] += g * load_lanes(p + v * kLanes);
  }
  for (int v = 0; v < V; ++v) store_lanes(out + c0 + v * kLanes, sums[v]);
}

// Rows [begin, end) of a result, a span of columns at a time (the span of
// every row of m stays in the cache). kept/counts: each row's kept values
// (at most `stride` each; Kept::at is the row of m, Kept::g the dz).
FASTNN_VECTOR_CLONES
void sum_kept_rows(const Kept* kept, const int32_t* counts, int64_t stride, const float* m,
                   int64_t cols, int64_t begin, int64_t end, float* out) {
  int64_t c0 = 0;
  for (; c0 + kSpanLanes * kLanes <= cols; c0 += kSpanLanes * kLanes) {
    for (int64_t r = begin; r < end; ++r)
      sum_rows<kSpanLanes>(kept + r * stride, counts[r], m, cols, c0, out + r * cols);
  }
  for (; c0 < cols; c0 += kLanes) {
    for (int64_t r = begin; r < end; ++r)
      sum_rows<1>(kept + r * stride, counts[r], m, cols, c0, out + r * cols);
  }
}

class LinearReluDropout : public torch::autograd::Function<LinearReluDropout> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, double keep_prob) {
    const at::Tensor in = x.contiguous();
    at::Tensor out = at::addmm(bias, in, weight.t());
    const float scale = keep_prob < 1.0 ? 1.0f / static_cast<float>(keep_prob) : 1.0f;
    if (keep_prob < 1.0) {
      // LibTorch's CPU dropout: bernoulli_ on a tensor like the input.
      const at::Tensor noise = at::empty_like(out).bernoulli_(keep_prob);
      const float* ns = noise.data_ptr<float>();
      float* os = out.data_ptr<float>();
      at::parallel_for(0, out.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float r = os[i] > 0.f || os[i] != os[i] ? os[i] : 0.f;
          os[i] = r * (ns[i] * scale);
        }
      });
    } else {
      out.relu_();
    }
    ctx->save_for_backward({in, weight, out});
    ctx->saved_data["scale"] = static_cast<double>(scale);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& out = saved[2];
    const float scale = static_cast<float>(ctx->saved_data["scale"].toDouble());
    const at::Tensor grad = grads[0].contiguous();
    const int64_t rows = x.size(0), in = x.size(1), units = weight.size(0);
    const float* os = out.data_ptr<float>();
    const float* gs = grad.data_ptr<float>();
    at::Tensor dweight = at::empty({units, in}, grad.options());
    at::Tensor dbias = at::empty({units}, grad.options());
    at::Tensor dx = ctx->needs_input_grad(0) ? at::empty({rows, in}, grad.options()) : at::Tensor();
    // Per unit j: the rows b where it passes a gradient. Per row b: the units.
    std::vector<Kept> by_unit(units * rows), by_row(dx.defined() ? rows * units : 0);
    std::vector<int32_t> unit_count(units), row_count(rows);
    float* db = dbias.data_ptr<float>();
    at::parallel_for(0, units, 16, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        int32_t count = 0;
        float total = 0.f;
        for (int64_t b = 0; b < rows; ++b) {
          if (!(os[b * units + j] > 0.f)) continue;
          const float dz = gs[b * units + j] * scale;
          total += dz;
          by_unit[j * rows + count++] = {static_cast<int32_t>(b), dz};
        }
        unit_count[j] = count;
        db[j] = total;
      }
      sum_kept_rows(by_unit.data(), unit_count.data(), rows, x.data_ptr<float>(), in, begin, end,
                    dweight.data_ptr<float>());
    });
    if (dx.defined()) {
      at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          int32_t count = 0;
          for (int64_t j = 0; j < units; ++j) {
            if (!(os[b * units + j] > 0.f)) continue;
            by_row[b * units + count++] = {static_cast<int32_t>(j), gs[b * units + j] * scale};
          }
          row_count[b] = count;
        }
        sum_kept_rows(by_row.data(), row_count.data(), units, weight.data_ptr<float>(), in, begin,
                      end, dx.data_ptr<float>());
      });
    }
    return {dx, dweight, dbias, at::Tensor()};
  }
};

}  // namespace

bool linear_relu_dropout_serves(const at::Tensor& x) {
  return serve(x) && x.dim() == 2 && x.size(1) % kLanes == 0 && x.size(0) > 0;
}

at::Tensor linear_relu_dropout(const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double keep_prob) {
  TORCH_CHECK(linear_relu_dropout_serves(x) && weight.dim() == 2 && weight.size(1) == x.size(1) &&
                  bias.dim() == 1 && bias.size(0) == weight.size(0),
              "linear_relu_dropout: x must be a CPU float32 (N, K) with K a multiple of 8, weight "
              "(M, K), bias (M), got ",
              x.sizes(), ", ", weight.sizes(), ", ", bias.sizes());
  TORCH_CHECK(keep_prob > 0.0 && keep_prob <= 1.0,
              "linear_relu_dropout: keep_prob must be in (0, 1], got ", keep_prob);
  RECORD_FUNCTION("fastnn::linear_relu_dropout", std::vector<c10::IValue>({x}));
  return LinearReluDropout::apply(x, weight, bias, keep_prob);
}

}  // namespace fastnn::kernels
