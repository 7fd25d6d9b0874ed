// LeNet's second block, conv 5x5 -> ReLU -> 2x2 max-pool, with a backward
// pass that computes only what is not zero (models/lenet_kernels.h).
//
// The pool passes each window's gradient to one of its four pixels, and
// ReLU only where the pooled value was positive: at least three quarters of
// the convolution's output gradient are zeros. LibTorch's backward
// multiplies them all (two GEMMs of the full im2col size); this one visits
// the kept pixels only, from the window positions the forward pass stored:
//   dW[co][kh][kw][:] += g * x[y + kh - 2][x + kw - 2][:]
//   dx[y + kh - 2][x + kw - 2][:] += g * W[co][kh][kw][:]
// for every kept (pixel (y, x), channel co, gradient g). Each sum runs over
// registers: for the weight gradient, one output channel's kept pixels; for
// the input gradient, one pixel's kept channels. The forward pass is
// LibTorch's convolution and the fused ReLU/pool of models/kernel_lanes.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/kernel_lanes.h"
#include "models/lenet_kernels.h"
#include "src/compat/vector_clones.h"

namespace fastnn::models {
namespace {

using lanes::kLanes;
using lanes::kNoGradient;
using lanes::Lanes;
using lanes::load_lanes;
using lanes::store_lanes;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int kSide = 5;
constexpr int kTaps = kSide * kSide;
constexpr int kPad = 2;
// Input channels summed together: two registers per tap.
constexpr int64_t kSpan = 2 * kLanes;

// One kept value of the convolution's output gradient: `at` is the offset of
// its 5x5 patch in the padded input (for the weight gradient) or its output
// channel (for the input gradient).
struct Kept {
  int32_t at;
  float g;
};

struct Shape {
  int64_t cin, c, h, w;  // input channels, output channels, height, width
  int64_t pw() const { return w + 2 * kPad; }
  int64_t padded() const { return (h + 2 * kPad) * pw() * cin; }
  int64_t pooled() const { return (h / 2) * (w / 2); }
};

// A thread's buffers for one image at a time.
struct Scratch {
  explicit Scratch(const Shape& s)
      : xp(s.padded()),
        dxp(s.padded()),
        by_channel(s.c * s.pooled()),
        channel_count(s.c),
        by_pixel(s.h * s.w * s.c),
        pixel_count(s.h * s.w) {}
  std::vector<float> xp, dxp;    // the image and its gradient, padded, (H+4, W+4, Cin)
  std::vector<Kept> by_channel;  // per output channel: its kept pixels
  std::vector<int32_t> channel_count;
  std::vector<Kept> by_pixel;  // per pixel: its kept output channels
  std::vector<int32_t> pixel_count;
};

// sum += g * p[kw * stride + (0 .. kSpan)] for the kSide taps of a row.
#define FASTNN_ROW_SUMS(SUMS, P, STRIDE, G)                      \
  _Pragma("GCC unroll 5") for (int kw = 0; kw < kSide; ++kw) {   \
    SUMS[kw][0] += (G)*load_lanes((P) + kw * (STRIDE));          \
    SUMS[kw][1] += (G)*load_lanes((P) + kw * (STRIDE) + kLanes); \
  }

// One image's share of the backward pass. x: (Cin, H, W); g and arg:
// (H/2 * W/2, C), the pooled gradient and window positions; wt: the weights
// as (C, 5, 5, Cin). dw ((C, 5, 5, Cin)) and db accumulate; dx (Cin, H, W)
// is written when not null.
__attribute__((always_inline)) inline void image_backward(const Shape& s, const float* x,
                                                          const float* g, const uint8_t* arg,
                                                          const float* wt, Scratch& t, float* dw,
                                                          float* db, float* dx) {
  const int64_t cin = s.cin, c = s.c, h = s.h, w = s.w, pw = s.pw(), wp = w / 2;
  const int64_t pooled = s.pooled();
  // The kept values, by channel and by pixel.
  std::fill(t.channel_count.begin(), t.channel_count.end(), 0);
  std::fill(t.pixel_count.begin(), t.pixel_count.end(), 0);
  for (int64_t q = 0; q < pooled; ++q) {
    const int64_t qy = q / wp, qx = q % wp;
    for (int64_t co = 0; co < c; ++co) {
      const uint8_t a = arg[q * c + co];
      if (a == kNoGradient) continue;
      const float gv = g[q * c + co];
      const int64_t y = 2 * qy + (a >> 1), xx = 2 * qx + (a & 1), pixel = y * w + xx;
      db[co] += gv;
      t.by_channel[co * pooled + t.channel_count[co]++] = {
          static_cast<int32_t>((y * pw + xx) * cin), gv};
      t.by_pixel[pixel * c + t.pixel_count[pixel]++] = {static_cast<int32_t>(co), gv};
    }
  }
  // The image, zero-bordered and channels-last.
  float* xp = t.xp.data();
  std::fill(t.xp.begin(), t.xp.end(), 0.f);
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        xp[((y + kPad) * pw + xx + kPad) * cin + ci] = x[(ci * h + y) * w + xx];
  // The weight gradient: per output channel, a sum over its kept pixels.
  for (int64_t co = 0; co < c; ++co) {
    const Kept* kept = t.by_channel.data() + co * pooled;
    const int32_t count = t.channel_count[co];
    if (count == 0) continue;
    for (int kh = 0; kh < kSide; ++kh) {
      for (int64_t c0 = 0; c0 < cin; c0 += kSpan) {
        Lanes sums[kSide][2] = {};
        for (int32_t k = 0; k < count; ++k) {
          const float* p = xp + kept[k].at + kh * pw * cin + c0;
          FASTNN_ROW_SUMS(sums, p, cin, kept[k].g)
        }
        float* d = dw + (co * kTaps + kh * kSide) * cin + c0;
        for (int kw = 0; kw < kSide; ++kw) {
          store_lanes(d + kw * cin, load_lanes(d + kw * cin) + sums[kw][0]);
          store_lanes(d + kw * cin + kLanes, load_lanes(d + kw * cin + kLanes) + sums[kw][1]);
        }
      }
    }
  }
  if (dx == nullptr) return;
  // The input gradient: per pixel, a sum over its kept channels, added into
  // the 5x5 patch the pixel saw.
  float* dxp = t.dxp.data();
  std::fill(t.dxp.begin(), t.dxp.end(), 0.f);
  for (int64_t pixel = 0; pixel < h * w; ++pixel) {
    const Kept* kept = t.by_pixel.data() + pixel * c;
    const int32_t count = t.pixel_count[pixel];
    if (count == 0) continue;
    const int64_t y = pixel / w, xx = pixel % w;
    for (int kh = 0; kh < kSide; ++kh) {
      for (int64_t c0 = 0; c0 < cin; c0 += kSpan) {
        Lanes sums[kSide][2] = {};
        for (int32_t k = 0; k < count; ++k) {
          const float* p = wt + (kept[k].at * kTaps + kh * kSide) * cin + c0;
          FASTNN_ROW_SUMS(sums, p, cin, kept[k].g)
        }
        float* d = dxp + ((y + kh) * pw + xx) * cin + c0;
        for (int kw = 0; kw < kSide; ++kw) {
          store_lanes(d + kw * cin, load_lanes(d + kw * cin) + sums[kw][0]);
          store_lanes(d + kw * cin + kLanes, load_lanes(d + kw * cin + kLanes) + sums[kw][1]);
        }
      }
    }
  }
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        dx[(ci * h + y) * w + xx] = dxp[((y + kPad) * pw + xx + kPad) * cin + ci];
}

#undef FASTNN_ROW_SUMS

using ImageBackward = void (*)(const Shape&, const float*, const float*, const uint8_t*,
                               const float*, Scratch&, float*, float*, float*);

void image_backward_baseline(const Shape& s, const float* x, const float* g, const uint8_t* arg,
                             const float* wt, Scratch& t, float* dw, float* db, float* dx) {
  image_backward(s, x, g, arg, wt, t, dw, db, dx);
}

// AVX2 with fused multiply-adds where the CPU has them (picked at run time).
#ifdef FASTNN_AVX2_FMA_PATH
FASTNN_AVX2_FMA void image_backward_fma(const Shape& s, const float* x, const float* g,
                                        const uint8_t* arg, const float* wt, Scratch& t, float* dw,
                                        float* db, float* dx) {
  image_backward(s, x, g, arg, wt, t, dw, db, dx);
}
#endif

ImageBackward pick_image_backward() {
  static const ImageBackward pass =
      FASTNN_PICK_AVX2_FMA(image_backward_fma, image_backward_baseline);
  return pass;
}

class ConvReluMaxPoolSparse : public torch::autograd::Function<ConvReluMaxPoolSparse> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias) {
    const at::Tensor in = x.contiguous();
    const at::Tensor z = at::conv2d(in, weight, bias, 1, kPad).contiguous();
    const int64_t n = z.size(0), c = z.size(1), h = z.size(2), w = z.size(3);
    at::Tensor out =
        at::empty({n, c, h / 2, w / 2}, z.options().memory_format(at::MemoryFormat::ChannelsLast));
    at::Tensor arg = at::empty({n, (h / 2) * (w / 2), c}, z.options().dtype(at::kByte));
    const float* src = z.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    uint8_t* args = arg.data_ptr<uint8_t>();
    at::parallel_for(0, n * (h / 2), 1, [&](int64_t begin, int64_t end) {
      lanes::relu_maxpool_rows(src, c, h, w, begin, end, dst, args);
    });
    ctx->save_for_backward({in, weight, arg});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& arg = saved[2];
    const at::Tensor grad = grads[0].contiguous(at::MemoryFormat::ChannelsLast);
    const Shape s{x.size(1), weight.size(0), x.size(2), x.size(3)};
    const int64_t n = x.size(0), pooled = s.pooled();
    const at::Tensor wt = weight.permute({0, 2, 3, 1}).contiguous();
    const bool want_dx = ctx->needs_input_grad(0);
    at::Tensor dx = want_dx ? at::empty_like(x) : at::Tensor();
    // One partial sum per chunk of images, added in chunk order: the same
    // result on every run with the same thread count.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
    const int64_t width = s.c * kTaps * s.cin + s.c;
    std::vector<float> partial(chunks * width, 0.f);
    const ImageBackward pass = pick_image_backward();
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
          pass(s, xs + i * image, gs + i * pooled * s.c, args + i * pooled * s.c, wts, t, dw,
               dw + s.c * kTaps * s.cin, dxs ? dxs + i * image : nullptr);
        }
      }
    });
    for (int64_t k = 1; k < chunks; ++k) {
      for (int64_t i = 0; i < width; ++i) partial[i] += partial[k * width + i];
    }
    at::Tensor sums = at::from_blob(partial.data(), {width}, at::kFloat);
    at::Tensor dweight = sums.narrow(0, 0, s.c * kTaps * s.cin)
                             .view({s.c, kSide, kSide, s.cin})
                             .permute({0, 3, 1, 2})
                             .contiguous();
    at::Tensor dbias = sums.narrow(0, s.c * kTaps * s.cin, s.c).clone();
    return {dx, dweight, dbias};
  }
};

}  // namespace

at::Tensor conv5x5_relu_maxpool_channels_last(const at::Tensor& x, const at::Tensor& weight,
                                              const at::Tensor& bias) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) % kSpan == 0 && x.size(2) % 2 == 0 && x.size(3) % 2 == 0,
              "conv5x5_relu_maxpool_channels_last: input must be (N, C, H, W) with C a multiple "
              "of 16 and H and W even, got ",
              x.sizes());
  TORCH_CHECK(weight.dim() == 4 && weight.size(0) % kLanes == 0 && weight.size(1) == x.size(1) &&
                  weight.size(2) == kSide && weight.size(3) == kSide,
              "conv5x5_relu_maxpool_channels_last: weight must be (C, ", x.size(1),
              ", 5, 5) with C a multiple of 8, got ", weight.sizes());
  RECORD_FUNCTION("fastnn::conv5x5_relu_maxpool_channels_last", std::vector<c10::IValue>({x}));
  return ConvReluMaxPoolSparse::apply(x, weight, bias);
}

}  // namespace fastnn::models
