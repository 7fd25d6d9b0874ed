#include "models/lenet_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/csrc/jit/frontend/tracer.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "models/kernel_lanes.h"
#include "src/compat/fused_kernels.h"
#include "src/compat/torch_compat.h"
#include "src/compat/vector_clones.h"

namespace fastnn::models {
namespace {

constexpr int kSide = 5;  // the kernel's side
constexpr int kTaps = kSide * kSide;
constexpr int kPad = 2;  // SAME padding of a 5x5 kernel

using lanes::kLanes;
using lanes::kNoGradient;
using lanes::Lanes;
using lanes::load_lanes;
using lanes::Mask;
using lanes::pool_lanes;
using lanes::select;
using lanes::splat;
using lanes::store_lanes;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One image, zero-bordered: (h + 4) x (w + 4).
void pad_image(const float* x, int64_t h, int64_t w, float* padded) {
  const int64_t pw = w + 2 * kPad;
  std::fill(padded, padded + (h + 2 * kPad) * pw, 0.f);
  for (int64_t y = 0; y < h; ++y)
    std::copy(x + y * w, x + (y + 1) * w, padded + (y + kPad) * pw + kPad);
}

// The first block's forward pass on one image. wt: the weights as
// [tap][channel]; out: this image's (C, h/2, w/2); arg: (h/2 * w/2, C),
// the window position (0..3) each pooled value came from, or kNoGradient.
FASTNN_VECTOR_CLONES
void conv_pool_forward(const float* padded, const float* wt, const float* bias, int64_t channels,
                       int64_t h, int64_t w, float* out, uint8_t* arg) {
  const int64_t pw = w + 2 * kPad, hp = h / 2, wp = w / 2;
  for (int64_t py = 0; py < hp; ++py) {
    for (int64_t px = 0; px < wp; ++px) {
      const int64_t p = py * wp + px;
      for (int64_t cb = 0; cb < channels; cb += kLanes) {
        // The window's four pixels at once: four independent sums per tap.
        const float* w0 = padded + 2 * py * pw + 2 * px;
        const float* w1 = w0 + 1;
        const float* w2 = w0 + pw;
        const float* w3 = w2 + 1;
        const Lanes b = load_lanes(bias + cb);
        Lanes s0 = b, s1 = b, s2 = b, s3 = b;
        for (int ky = 0; ky < kSide; ++ky) {
          for (int kx = 0; kx < kSide; ++kx) {
            const Lanes wk = load_lanes(wt + (ky * kSide + kx) * channels + cb);
            const int64_t off = ky * pw + kx;
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

// The first block's weight and bias gradients from one image: grad is this
// image's (C, h/2 * w/2) gradient of the pooled output; dw ([tap][channel])
// and db accumulate.
FASTNN_VECTOR_CLONES
void conv_pool_backward(const float* padded, const float* grad, const uint8_t* arg,
                        int64_t channels, int64_t h, int64_t w, float* dw, float* db) {
  const int64_t pw = w + 2 * kPad, hp = h / 2, wp = w / 2, pooled = hp * wp;
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
        const float* w0 = padded + 2 * py * pw + 2 * px;
        const float* w1 = w0 + 1;
        const float* w2 = w0 + pw;
        const float* w3 = w2 + 1;
        for (int ky = 0; ky < kSide; ++ky) {
          for (int kx = 0; kx < kSide; ++kx) {
            const int64_t off = ky * pw + kx;
            float* d = dw + (ky * kSide + kx) * channels + cb;
            store_lanes(
                d, load_lanes(d) + (w0[off] * g0 + w1[off] * g1) + (w2[off] * g2 + w3[off] * g3));
          }
        }
      }
    }
  }
}

class ConvReluMaxPool : public torch::autograd::Function<ConvReluMaxPool> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias) {
    const at::Tensor image = x.contiguous();
    const int64_t n = image.size(0), h = image.size(2), w = image.size(3), c = weight.size(0);
    const at::Tensor wt = weight.reshape({c, kTaps}).t().contiguous();
    const at::Tensor b = bias.contiguous();
    at::Tensor out = at::empty({n, c, h / 2, w / 2}, image.options());
    at::Tensor arg = at::empty({n, (h / 2) * (w / 2), c}, image.options().dtype(at::kByte));
    const float* src = image.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> padded((h + 2 * kPad) * (w + 2 * kPad));
      for (int64_t i = begin; i < end; ++i) {
        pad_image(src + i * h * w, h, w, padded.data());
        conv_pool_forward(padded.data(), wt.data_ptr<float>(), b.data_ptr<float>(), c, h, w,
                          dst + i * c * (h / 2) * (w / 2), args + i * (h / 2) * (w / 2) * c);
      }
    });
    ctx->save_for_backward({image, arg});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& image = saved[0];
    const at::Tensor& arg = saved[1];
    const at::Tensor grad = grads[0].contiguous();
    const int64_t n = image.size(0), h = image.size(2), w = image.size(3);
    const int64_t c = arg.size(2), pooled = (h / 2) * (w / 2);
    // One partial sum per chunk of images, added in chunk order: the same
    // result on every run with the same thread count.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
    const int64_t width = (kTaps + 1) * c;
    std::vector<float> partial(chunks * width, 0.f);
    const float* src = image.data_ptr<float>();
    const float* g = grad.data_ptr<float>();
    const uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> padded((h + 2 * kPad) * (w + 2 * kPad));
      for (int64_t k = begin; k < end; ++k) {
        float* dw = partial.data() + k * width;
        for (int64_t i = k * n / chunks; i < (k + 1) * n / chunks; ++i) {
          pad_image(src + i * h * w, h, w, padded.data());
          conv_pool_backward(padded.data(), g + i * c * pooled, args + i * pooled * c, c, h, w, dw,
                             dw + kTaps * c);
        }
      }
    });
    for (int64_t k = 1; k < chunks; ++k) {
      for (int64_t i = 0; i < width; ++i) partial[i] += partial[k * width + i];
    }
    at::Tensor dweight = at::empty({c, 1, kSide, kSide}, grad.options());
    at::Tensor dbias = at::empty({c}, grad.options());
    float* dwp = dweight.data_ptr<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int t = 0; t < kTaps; ++t) dwp[ch * kTaps + t] = partial[t * c + ch];
      dbias.data_ptr<float>()[ch] = partial[kTaps * c + ch];
    }
    return {at::Tensor(), dweight, dbias};
  }
};

class ReluMaxPoolChannelsLast : public torch::autograd::Function<ReluMaxPoolChannelsLast> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x) {
    const at::Tensor in = x.contiguous();
    const int64_t n = in.size(0), c = in.size(1), h = in.size(2), w = in.size(3);
    const int64_t hp = h / 2, wp = w / 2;
    at::Tensor out =
        at::empty({n, c, hp, wp}, in.options().memory_format(at::MemoryFormat::ChannelsLast));
    // Window positions, (N, H/2 * W/2, C) as the output's memory.
    at::Tensor arg = at::empty({n, hp * wp, c}, in.options().dtype(at::kByte));
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, n * hp, 1, [&](int64_t begin, int64_t end) {
      lanes::relu_maxpool_rows(src, c, h, w, begin, end, dst, args);
    });
    ctx->save_for_backward({arg});
    ctx->saved_data["h"] = h;
    ctx->saved_data["w"] = w;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor arg = ctx->get_saved_variables()[0];
    const int64_t h = ctx->saved_data["h"].toInt(), w = ctx->saved_data["w"].toInt();
    const int64_t n = arg.size(0), c = arg.size(2), hp = h / 2, wp = w / 2;
    const at::Tensor grad = grads[0].contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor gin =
        at::empty({n, c, h, w}, grad.options().memory_format(at::MemoryFormat::Contiguous));
    const float* g = grad.data_ptr<float>();
    const uint8_t* args = arg.data_ptr<uint8_t>();
    float* dst = gin.data_ptr<float>();
    at::parallel_for(0, n * hp, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t i = row / hp, py = row % hp;
        for (int64_t px = 0; px < wp; ++px) {
          const int64_t at_pixel = (i * hp * wp + py * wp + px) * c;
          for (int64_t cb = 0; cb < c; cb += kLanes) {
            const Lanes gv = load_lanes(g + at_pixel + cb);
            Mask at;
            for (int j = 0; j < kLanes; ++j) at[j] = args[at_pixel + cb + j];
            // Every input position gets its value: the gradient or zero.
            const Lanes g0 = select(at == splat(0), gv, Lanes{}),
                        g1 = select(at == splat(1), gv, Lanes{}),
                        g2 = select(at == splat(2), gv, Lanes{}),
                        g3 = select(at == splat(3), gv, Lanes{});
            for (int j = 0; j < kLanes; ++j) {
              float* window = dst + ((i * c + cb + j) * h + 2 * py) * w + 2 * px;
              window[0] = g0[j];
              window[1] = g1[j];
              window[w] = g2[j];
              window[w + 1] = g3[j];
            }
          }
        }
      }
    });
    return {gin};
  }
};

}  // namespace

bool fused_kernels_apply(const at::Tensor& x) {
  return compat::fused_kernels_switched_on() && x.device().is_cpu() &&
         x.scalar_type() == at::kFloat && !compat::cpu_autocast_enabled() &&
         !torch::jit::tracer::isTracing();
}

at::Tensor conv5x5_relu_maxpool(const at::Tensor& x, const at::Tensor& weight,
                                const at::Tensor& bias) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == 1 && x.size(2) % 2 == 0 && x.size(3) % 2 == 0,
              "conv5x5_relu_maxpool: input must be (N, 1, H, W) with H and W even, got ",
              x.sizes());
  TORCH_CHECK(weight.dim() == 4 && weight.size(0) % kLanes == 0 && weight.size(1) == 1 &&
                  weight.size(2) == kSide && weight.size(3) == kSide,
              "conv5x5_relu_maxpool: weight must be (C, 1, 5, 5) with C a multiple of 8, got ",
              weight.sizes());
  RECORD_FUNCTION("fastnn::conv5x5_relu_maxpool", std::vector<c10::IValue>({x}));
  return ConvReluMaxPool::apply(x, weight, bias);
}

at::Tensor relu_maxpool_channels_last(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) % kLanes == 0 && x.size(2) % 2 == 0 && x.size(3) % 2 == 0,
              "relu_maxpool_channels_last: input must be (N, C, H, W) with C a multiple of 8 and H "
              "and W even, got ",
              x.sizes());
  RECORD_FUNCTION("fastnn::relu_maxpool_channels_last", std::vector<c10::IValue>({x}));
  return ReluMaxPoolChannelsLast::apply(x);
}

}  // namespace fastnn::models
