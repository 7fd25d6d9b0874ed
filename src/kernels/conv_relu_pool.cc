// conv -> ReLU -> 2x2 max-pool: which path serves a block, and the direct
// path for a one-channel input (src/kernels/kernels.h).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/csrc/jit/frontend/tracer.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/compat/torch_compat.h"
#include "src/compat/vector_clones.h"
#include "src/kernels/internal.h"
#include "src/kernels/kernels.h"
#include "src/kernels/lanes.h"

namespace fastnn::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The direct path's geometry: the image, the kernel, the padding.
struct Geometry {
  int64_t h, w, kh, kw, ph, pw;
  int64_t padded_w() const { return w + 2 * pw; }
  int64_t padded_size() const { return (h + 2 * ph) * padded_w(); }
  int64_t hp() const { return (h + 2 * ph - kh + 1) / 2; }  // pooled rows
  int64_t wp() const { return (w + 2 * pw - kw + 1) / 2; }  // pooled columns
  int64_t taps() const { return kh * kw; }
};

// One image, zero-bordered.
void pad_image(const float* x, const Geometry& g, float* padded) {
  const int64_t row = g.padded_w();
  std::fill(padded, padded + g.padded_size(), 0.f);
  for (int64_t y = 0; y < g.h; ++y)
    std::copy(x + y * g.w, x + (y + 1) * g.w, padded + (y + g.ph) * row + g.pw);
}

// The direct forward pass on one image. wt: the weights as [tap][channel];
// out: this image's (C, hp, wp); arg: (hp * wp, C), the window position
// (0..3) each pooled value came from, or kNoGradient.
FASTNN_VECTOR_CLONES
void direct_forward(const float* padded, const float* wt, const float* bias, int64_t channels,
                    const Geometry& g, float* out, uint8_t* arg) {
  const int64_t row = g.padded_w(), hp = g.hp(), wp = g.wp();
  for (int64_t py = 0; py < hp; ++py) {
    for (int64_t px = 0; px < wp; ++px) {
      const int64_t p = py * wp + px;
      for (int64_t cb = 0; cb < channels; cb += kLanes) {
        // The window's four pixels at once: four independent sums per tap.
        const float* w0 = padded + 2 * py * row + 2 * px;
        const float* w1 = w0 + 1;
        const float* w2 = w0 + row;
        const float* w3 = w2 + 1;
        const Lanes b = load_lanes(bias + cb);
        Lanes s0 = b, s1 = b, s2 = b, s3 = b;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const Lanes wk = load_lanes(wt + (ky * g.kw + kx) * channels + cb);
            const int64_t off = ky * row + kx;
            s0 += w0[off] * wk;
            s1 += w1[off] * wk;
            s2 += w2[off] * wk;
            s3 += w3[off] * wk;
          }
        }
        const Lanes v[4] = {s0, s1, s2, s3};
        Lanes pooled_v;
        Mask at;
        pool_lanes(v, pooled_v, at);
        alignas(32) float o[kLanes];
        store_lanes(o, pooled_v);
        for (int j = 0; j < kLanes; ++j) {
          out[(cb + j) * hp * wp + p] = o[j];
          arg[p * channels + cb + j] = static_cast<uint8_t>(at[j]);
        }
      }
    }
  }
}

// The weight and bias gradients from one image: grad is this image's
// (C, hp * wp) gradient of the pooled output; dw ([tap][channel]) and db
// accumulate.
FASTNN_VECTOR_CLONES
void direct_backward(const float* padded, const float* grad, const uint8_t* arg, int64_t channels,
                     const Geometry& g, float* dw, float* db) {
  const int64_t row = g.padded_w(), hp = g.hp(), wp = g.wp(), pooled = hp * wp;
  for (int64_t py = 0; py < hp; ++py) {
    for (int64_t px = 0; px < wp; ++px) {
      const int64_t p = py * wp + px;
      for (int64_t cb = 0; cb < channels; cb += kLanes) {
        Lanes gv;
        Mask at;
        for (int j = 0; j < kLanes; ++j) {
          gv[j] = grad[(cb + j) * pooled + p];
          at[j] = arg[p * channels + cb + j];
        }
        const Lanes d_bias = load_lanes(db + cb);
        store_lanes(db + cb, d_bias + select(at != splat(kNoGradient), gv, Lanes{}));
        const Lanes g0 = select(at == splat(0), gv, Lanes{}),
                    g1 = select(at == splat(1), gv, Lanes{}),
                    g2 = select(at == splat(2), gv, Lanes{}),
                    g3 = select(at == splat(3), gv, Lanes{});
        const float* w0 = padded + 2 * py * row + 2 * px;
        const float* w1 = w0 + 1;
        const float* w2 = w0 + row;
        const float* w3 = w2 + 1;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t off = ky * row + kx;
            float* d = dw + (ky * g.kw + kx) * channels + cb;
            store_lanes(
                d, load_lanes(d) + (w0[off] * g0 + w1[off] * g1) + (w2[off] * g2 + w3[off] * g3));
          }
        }
      }
    }
  }
}

class DirectConvReluMaxPool : public torch::autograd::Function<DirectConvReluMaxPool> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, int64_t pad_h, int64_t pad_w) {
    const at::Tensor image = x.contiguous();
    const Geometry g{image.size(2), image.size(3), weight.size(2), weight.size(3), pad_h, pad_w};
    const int64_t n = image.size(0), c = weight.size(0), hp = g.hp(), wp = g.wp();
    const at::Tensor wt = weight.reshape({c, g.taps()}).t().contiguous();
    const at::Tensor b = bias.contiguous();
    at::Tensor out = at::empty({n, c, hp, wp}, image.options());
    at::Tensor arg = at::empty({n, hp * wp, c}, image.options().dtype(at::kByte));
    const float* src = image.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> padded(g.padded_size());
      for (int64_t i = begin; i < end; ++i) {
        pad_image(src + i * g.h * g.w, g, padded.data());
        direct_forward(padded.data(), wt.data_ptr<float>(), b.data_ptr<float>(), c, g,
                       dst + i * c * hp * wp, args + i * hp * wp * c);
      }
    });
    ctx->save_for_backward({image, arg});
    ctx->saved_data["kh"] = g.kh;
    ctx->saved_data["kw"] = g.kw;
    ctx->saved_data["ph"] = pad_h;
    ctx->saved_data["pw"] = pad_w;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& image = saved[0];
    const at::Tensor& arg = saved[1];
    const Geometry g{image.size(2),
                     image.size(3),
                     ctx->saved_data["kh"].toInt(),
                     ctx->saved_data["kw"].toInt(),
                     ctx->saved_data["ph"].toInt(),
                     ctx->saved_data["pw"].toInt()};
    const at::Tensor grad = grads[0].contiguous();
    const int64_t n = image.size(0), c = arg.size(2), pooled = g.hp() * g.wp(), taps = g.taps();
    // One partial sum per chunk of images, added in chunk order: the same
    // result on every run with the same thread count.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
    const int64_t width = (taps + 1) * c;
    std::vector<float> partial(chunks * width, 0.f);
    const float* src = image.data_ptr<float>();
    const float* gs = grad.data_ptr<float>();
    const uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> padded(g.padded_size());
      for (int64_t k = begin; k < end; ++k) {
        float* dw = partial.data() + k * width;
        for (int64_t i = k * n / chunks; i < (k + 1) * n / chunks; ++i) {
          pad_image(src + i * g.h * g.w, g, padded.data());
          direct_backward(padded.data(), gs + i * c * pooled, args + i * pooled * c, c, g, dw,
                          dw + taps * c);
        }
      }
    });
    for (int64_t k = 1; k < chunks; ++k) {
      for (int64_t i = 0; i < width; ++i) partial[i] += partial[k * width + i];
    }
    at::Tensor dweight = at::empty({c, 1, g.kh, g.kw}, grad.options());
    at::Tensor dbias = at::empty({c}, grad.options());
    float* dwp = dweight.data_ptr<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t t = 0; t < taps; ++t) dwp[ch * taps + t] = partial[t * c + ch];
      dbias.data_ptr<float>()[ch] = partial[taps * c + ch];
    }
    return {at::Tensor(), dweight, dbias, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool serve(const at::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat && !compat::cpu_autocast_enabled() &&
         !torch::jit::tracer::isTracing();
}

bool conv_relu_max_pool_serves(const at::Tensor& x, const at::Tensor& weight, int64_t pad_h,
                               int64_t pad_w) {
  if (!serve(x) || x.dim() != 4 || weight.dim() != 4 || weight.scalar_type() != at::kFloat) {
    return false;
  }
  const int64_t ho = x.size(2) + 2 * pad_h - weight.size(2) + 1;
  const int64_t wo = x.size(3) + 2 * pad_w - weight.size(3) + 1;
  return weight.size(1) == x.size(1) && weight.size(0) % kLanes == 0 && pad_h >= 0 && pad_w >= 0 &&
         ho >= 2 && wo >= 2 && x.size(0) > 0;
}

at::Tensor conv_relu_max_pool_direct(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, int64_t pad_h, int64_t pad_w) {
  return DirectConvReluMaxPool::apply(x, weight, bias, pad_h, pad_w);
}

at::Tensor conv_relu_max_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              int64_t pad_h, int64_t pad_w, c10::MemoryFormat format) {
  TORCH_CHECK(conv_relu_max_pool_serves(x, weight, pad_h, pad_w),
              "conv_relu_max_pool: x must be a CPU float32 (N, Cin, H, W) and weight (C, Cin, KH, "
              "KW) with C a multiple of 8 and a convolution output of at least 2x2, got ",
              x.sizes(), " and ", weight.sizes(), " with padding ", pad_h, ", ", pad_w);
  RECORD_FUNCTION("fastnn::conv_relu_max_pool", std::vector<c10::IValue>({x}));
  const bool direct = x.size(1) == 1 && !x.requires_grad();
  const at::Tensor out = direct ? conv_relu_max_pool_direct(x, weight, bias, pad_h, pad_w)
                                : conv_relu_max_pool_sparse(x, weight, bias, pad_h, pad_w);
  return out.contiguous(format);
}

}  // namespace fastnn::kernels
