// Eight floats at once for the CPU kernels (src/kernels/): GCC's vector
// extension, one AVX register in the AVX2 clone of a loop
// (FASTNN_VECTOR_CLONES), two SSE registers in the baseline one.
// Comparisons give masks of all-ones lanes; selects are bitwise, never
// branches.
#pragma once

#include <cstdint>
#include <cstring>

namespace fastnn::kernels {

constexpr int kLanes = 8;
// A pooled value that was not positive: ReLU passes no gradient to it.
constexpr uint8_t kNoGradient = 255;

typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t Mask __attribute__((vector_size(kLanes * sizeof(int32_t))));

// One kept (non-zero) value of an output gradient in a sparse backward
// pass: `at` says where its operand lies (an offset or a row, as the pass
// defines it), `g` is the gradient.
struct Kept {
  int32_t at;
  float g;
};

inline Lanes load_lanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_lanes(float* p, Lanes v) { std::memcpy(p, &v, sizeof v); }
inline Mask splat(int32_t v) { return Mask{v, v, v, v, v, v, v, v}; }
inline Mask bits(Lanes v) {
  Mask m;
  std::memcpy(&m, &v, sizeof m);
  return m;
}
inline Lanes select(Mask m, Lanes a, Lanes b) {
  const Mask r = (m & bits(a)) | (~m & bits(b));
  Lanes v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}
inline Mask select(Mask m, Mask a, Mask b) { return (m & a) | (~m & b); }

// LibTorch's max-pool rule: the first maximum of the window in row-major
// order, and a NaN wins (it propagates); then ReLU, which keeps what is
// positive (NaN included, as torch::relu does). out: the pooled values;
// at: the position (0..3) each came from, or kNoGradient where ReLU zeroed it.
inline void pool_lanes(const Lanes v[4], Lanes& out, Mask& at) {
  Lanes best = v[0];
  Mask where = splat(0);
  for (int s = 1; s < 4; ++s) {
    const Mask t = (v[s] > best) | (v[s] != v[s]);
    best = select(t, v[s], best);
    where = select(t, splat(s), where);
  }
  const Mask keep = (best > Lanes{}) | (best != best);
  out = select(keep, best, Lanes{});
  at = select(keep, where, splat(kNoGradient));
}

// max_pool2d(relu(x), 2, 2) of the rows [begin, end) of (image, pooled row)
// of x (N, C, H, W) contiguous NCHW, C a multiple of 8; an odd last row or
// column is dropped (a VALID pool). dst gets the pooled values channels-last
// ((N, H/2, W/2, C) memory), args the window position of each (or
// kNoGradient), in the same order.
inline void relu_maxpool_rows(const float* src, int64_t c, int64_t h, int64_t w, int64_t begin,
                              int64_t end, float* dst, uint8_t* args) {
  const int64_t hp = h / 2, wp = w / 2;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t i = row / hp, py = row % hp;
    for (int64_t px = 0; px < wp; ++px) {
      const int64_t at_pixel = (i * hp * wp + py * wp + px) * c;
      for (int64_t cb = 0; cb < c; cb += kLanes) {
        Lanes v[4];
        for (int j = 0; j < kLanes; ++j) {
          const float* window = src + ((i * c + cb + j) * h + 2 * py) * w + 2 * px;
          v[0][j] = window[0];
          v[1][j] = window[1];
          v[2][j] = window[w];
          v[3][j] = window[w + 1];
        }
        Lanes pooled;
        Mask at;
        pool_lanes(v, pooled, at);
        store_lanes(dst + at_pixel + cb, pooled);
        for (int j = 0; j < kLanes; ++j) args[at_pixel + cb + j] = static_cast<uint8_t>(at[j]);
      }
    }
  }
}

}  // namespace fastnn::kernels
