// conv -> ReLU -> 2x2 max-pool with a backward pass that computes only what
// is not zero (src/kernels/kernels.h).
//
// LibTorch's convolution backward multiplies the whole output gradient (two
// GEMMs of the full im2col size); this one visits the pixels the pool kept,
// from the window positions the forward pass stored. With stride 1, padding
// (ph, pw) and the input zero-bordered by it:
//   dW[co][kh][kw][:] += g * x[y + kh][x + kw][:]
//   dx[y + kh][x + kw][:] += g * W[co][kh][kw][:]
// for every kept (output pixel (y, x), channel co, gradient g). Each sum
// runs over registers: for the weight gradient, one output channel's kept
// pixels; for the input gradient, one pixel's kept channels; a row of the
// kernel at most kChunk taps at a time. Channels run kSpan at a time, the
// input's zero-padded up to a multiple of kSpan. The forward pass is
// LibTorch's convolution and the fused ReLU/pool of src/kernels/lanes.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/compat/vector_clones.h"
#include "src/kernels/internal.h"
#include "src/kernels/lanes.h"

namespace fastnn::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Input channels summed together: two registers per tap.
constexpr int64_t kSpan = 2 * kLanes;
// Taps of a kernel row summed together (registers: 2 * kChunk sums).
constexpr int kChunk = 5;

struct Shape {
  int64_t cin, c, h, w, kh, kw, ph, pw;
  int64_t cs() const { return (cin + kSpan - 1) / kSpan * kSpan; }  // padded channels
  int64_t row() const { return w + 2 * pw; }                        // padded width
  int64_t padded() const { return (h + 2 * ph) * row() * cs(); }
  int64_t ho() const { return h + 2 * ph - kh + 1; }  // the convolution's output
  int64_t wo() const { return w + 2 * pw - kw + 1; }
  int64_t pooled() const { return (ho() / 2) * (wo() / 2); }
  int64_t taps() const { return kh * kw; }
};

// A thread's buffers for one image at a time.
struct Scratch {
  explicit Scratch(const Shape& s)
      : xp(s.padded()),
        dxp(s.padded()),
        by_channel(s.c * s.pooled()),
        channel_count(s.c),
        by_pixel(s.ho() * s.wo() * s.c),
        pixel_count(s.ho() * s.wo()) {}
  std::vector<float> xp, dxp;    // the image and its gradient, padded, (H+2ph, W+2pw, cs)
  std::vector<Kept> by_channel;  // per output channel: its kept pixels' patch offsets in xp
  std::vector<int32_t> channel_count;
  std::vector<Kept> by_pixel;  // per output pixel: its kept output channels
  std::vector<int32_t> pixel_count;
};

// d[kw * stride + (0 .. kSpan)] += sum over kept k of kept[k].g *
// base[kept[k].at * scale + kw * stride + (0 .. kSpan)], for W taps.
template <int W>
[[gnu::always_inline]] inline void chunk_sums(const Kept* kept, int32_t count, const float* base,
                                              int64_t scale, int64_t stride, float* d) {
  Lanes sums[W][2] = {};
  for (int32_t k = 0; k < count; ++k) {
    const float* p = base + kept[k].at * scale;
    const float g = kept[k].g;
#pragma GCC unroll 5
    for (int kw = 0; kw < W; ++kw) {
      sums[kw][0] += g * load_lanes(p + kw * stride);
      sums[kw][1] += g * load_lanes(p + kw * stride + kLanes);
    }
  }
  for (int kw = 0; kw < W; ++kw) {
    store_lanes(d + kw * stride, load_lanes(d + kw * stride) + sums[kw][0]);
    store_lanes(d + kw * stride + kLanes, load_lanes(d + kw * stride + kLanes) + sums[kw][1]);
  }
}

// A kernel row of `taps` taps, kChunk at a time.
[[gnu::always_inline]] inline void row_sums(int64_t taps, const Kept* kept, int32_t count,
                                            const float* base, int64_t scale, int64_t stride,
                                            float* d) {
  for (int64_t t0 = 0; t0 < taps; t0 += kChunk) {
    const float* b = base + t0 * stride;
    float* dt = d + t0 * stride;
    switch (std::min<int64_t>(kChunk, taps - t0)) {
      case 1:
        chunk_sums<1>(kept, count, b, scale, stride, dt);
        break;
      case 2:
        chunk_sums<2>(kept, count, b, scale, stride, dt);
        break;
      case 3:
        chunk_sums<3>(kept, count, b, scale, stride, dt);
        break;
      case 4:
        chunk_sums<4>(kept, count, b, scale, stride, dt);
        break;
      default:
        chunk_sums<5>(kept, count, b, scale, stride, dt);
        break;
    }
  }
}

// The kept values of one image, by channel and by pixel; db accumulates.
// g and arg: (pooled, C), the pooled gradient and window positions.
[[gnu::always_inline]] inline void gather_kept(const Shape& s, const float* g, const uint8_t* arg,
                                               Scratch& t, float* db) {
  const int64_t c = s.c, wp = s.wo() / 2, pooled = s.pooled(), cs = s.cs();
  std::fill(t.channel_count.begin(), t.channel_count.end(), 0);
  std::fill(t.pixel_count.begin(), t.pixel_count.end(), 0);
  for (int64_t q = 0; q < pooled; ++q) {
    const int64_t qy = q / wp, qx = q % wp;
    for (int64_t co = 0; co < c; ++co) {
      const uint8_t a = arg[q * c + co];
      if (a == kNoGradient) continue;
      const float gv = g[q * c + co];
      const int64_t y = 2 * qy + (a >> 1), xx = 2 * qx + (a & 1), pixel = y * s.wo() + xx;
      db[co] += gv;
      t.by_channel[co * pooled + t.channel_count[co]++] = {
          static_cast<int32_t>((y * s.row() + xx) * cs), gv};
      t.by_pixel[pixel * c + t.pixel_count[pixel]++] = {static_cast<int32_t>(co), gv};
    }
  }
}

// One image's share of the backward pass. x: (Cin, H, W); wt: the weights
// as (C, KH, KW, cs). dw ((C, KH, KW, cs)) and db accumulate; dx (Cin, H, W)
// is written when not null.
FASTNN_VECTOR_CLONES
void image_backward(const Shape& s, const float* x, const float* g, const uint8_t* arg,
                    const float* wt, Scratch& t, float* dw, float* db, float* dx) {
  const int64_t cin = s.cin, cs = s.cs(), h = s.h, w = s.w, row = s.row();
  gather_kept(s, g, arg, t, db);
  // The image, zero-bordered and channels-last.
  float* xp = t.xp.data();
  std::fill(t.xp.begin(), t.xp.end(), 0.f);
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        xp[((y + s.ph) * row + xx + s.pw) * cs + ci] = x[(ci * h + y) * w + xx];
  // The weight gradient: per output channel, a sum over its kept pixels.
  for (int64_t co = 0; co < s.c; ++co) {
    const int32_t count = t.channel_count[co];
    if (count == 0) continue;
    const Kept* kept = t.by_channel.data() + co * s.pooled();
    for (int64_t kh = 0; kh < s.kh; ++kh) {
      for (int64_t c0 = 0; c0 < cs; c0 += kSpan) {
        row_sums(s.kw, kept, count, xp + kh * row * cs + c0, 1, cs,
                 dw + ((co * s.kh + kh) * s.kw) * cs + c0);
      }
    }
  }
  if (dx == nullptr) return;
  // The input gradient: per output pixel, a sum over its kept channels,
  // added into the patch the pixel saw.
  float* dxp = t.dxp.data();
  std::fill(t.dxp.begin(), t.dxp.end(), 0.f);
  for (int64_t pixel = 0; pixel < s.ho() * s.wo(); ++pixel) {
    const int32_t count = t.pixel_count[pixel];
    if (count == 0) continue;
    const Kept* kept = t.by_pixel.data() + pixel * s.c;
    const int64_t y = pixel / s.wo(), xx = pixel % s.wo();
    for (int64_t kh = 0; kh < s.kh; ++kh) {
      for (int64_t c0 = 0; c0 < cs; c0 += kSpan) {
        row_sums(s.kw, kept, count, wt + kh * s.kw * cs + c0, s.taps() * cs, cs,
                 dxp + ((y + kh) * row + xx) * cs + c0);
      }
    }
  }
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        dx[(ci * h + y) * w + xx] = dxp[((y + s.ph) * row + xx + s.pw) * cs + ci];
}

// The weights as (C, KH, KW, cs), channels zero-padded.
at::Tensor channels_last_weights(const at::Tensor& weight, const Shape& s) {
  at::Tensor wt = at::zeros({s.c, s.kh, s.kw, s.cs()}, weight.options());
  wt.narrow(3, 0, s.cin).copy_(weight.permute({0, 2, 3, 1}));
  return wt;
}

class SparseConvReluMaxPool : public torch::autograd::Function<SparseConvReluMaxPool> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, int64_t pad_h, int64_t pad_w) {
    const at::Tensor in = x.contiguous();
    const at::Tensor z = at::conv2d(in, weight, bias, 1, {pad_h, pad_w}).contiguous();
    const int64_t n = z.size(0), c = z.size(1), h = z.size(2), w = z.size(3);
    at::Tensor out =
        at::empty({n, c, h / 2, w / 2}, z.options().memory_format(at::MemoryFormat::ChannelsLast));
    at::Tensor arg = at::empty({n, (h / 2) * (w / 2), c}, z.options().dtype(at::kByte));
    const float* src = z.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, n * (h / 2), 1, [&](int64_t begin, int64_t end) {
      relu_maxpool_rows(src, c, h, w, begin, end, dst, args);
    });
    ctx->save_for_backward({in, weight, arg});
    ctx->saved_data["ph"] = pad_h;
    ctx->saved_data["pw"] = pad_w;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& arg = saved[2];
    const at::Tensor grad = grads[0].contiguous(at::MemoryFormat::ChannelsLast);
    const Shape s{x.size(1),
                  weight.size(0),
                  x.size(2),
                  x.size(3),
                  weight.size(2),
                  weight.size(3),
                  ctx->saved_data["ph"].toInt(),
                  ctx->saved_data["pw"].toInt()};
    const int64_t n = x.size(0), pooled = s.pooled(), cs = s.cs();
    const at::Tensor wt = channels_last_weights(weight, s);
    const bool want_dx = ctx->needs_input_grad(0);
    at::Tensor dx = want_dx ? at::empty_like(x) : at::Tensor();
    // One partial sum per chunk of images, added in chunk order: the same
    // result on every run with the same thread count.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
    const int64_t dw_size = s.c * s.taps() * cs, width = dw_size + s.c;
    std::vector<float> partial(chunks * width, 0.f);
    const float* xs = x.data_ptr<float>();
    const float* gs = grad.data_ptr<float>();
    const uint8_t* args = arg.data_ptr<uint8_t>();
    const float* wts = wt.data_ptr<float>();
    float* dxs = want_dx ? dx.data_ptr<float>() : nullptr;
    const int64_t image = s.cin * s.h * s.w;
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      Scratch t(s);
      for (int64_t k = begin; k < end; ++k) {
        float* dw = partial.data() + k * width;
        for (int64_t i = k * n / chunks; i < (k + 1) * n / chunks; ++i) {
          image_backward(s, xs + i * image, gs + i * pooled * s.c, args + i * pooled * s.c, wts, t,
                         dw, dw + dw_size, dxs ? dxs + i * image : nullptr);
        }
      }
    });
    for (int64_t k = 1; k < chunks; ++k) {
      for (int64_t i = 0; i < width; ++i) partial[i] += partial[k * width + i];
    }
    at::Tensor sums = at::from_blob(partial.data(), {width}, at::kFloat);
    at::Tensor dweight = sums.narrow(0, 0, dw_size)
                             .view({s.c, s.kh, s.kw, cs})
                             .narrow(3, 0, s.cin)
                             .permute({0, 3, 1, 2})
                             .contiguous();
    at::Tensor dbias = sums.narrow(0, dw_size, s.c).clone();
    return {dx, dweight, dbias, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor conv_relu_max_pool_sparse(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, int64_t pad_h, int64_t pad_w) {
  return SparseConvReluMaxPool::apply(x, weight, bias, pad_h, pad_w);
}

}  // namespace fastnn::kernels
