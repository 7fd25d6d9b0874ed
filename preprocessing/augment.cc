#include "preprocessing/augment.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"

namespace fastnn::preprocessing {
namespace {

// CPython's math.degrees / math.radians: one multiplication by a constant.
constexpr double kPi = 3.14159265358979323846;
double degrees(double r) { return r * (180.0 / kPi); }
double radians(double d) { return d * (kPi / 180.0); }

// A float pixel value to the nearest byte.
uint8_t round_to_byte(float v) {
  return static_cast<uint8_t>(std::nearbyint(std::min(std::max(v, 0.0f), 255.0f)));
}
uint8_t round_to_byte(uint8_t v) { return v; }

uint8_t to_byte(float v) {
  // torchvision's .clamp(0, bound).to(uint8): a truncating cast.
  return static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f));
}

// _blend(img1, img2, ratio): ratio * img1 + (1 - ratio) * img2 in float32,
// each product rounded on its own (two tensor ops, then an add).
struct Blend {
  float a, b;
  explicit Blend(double ratio) : a(static_cast<float>(ratio)), b(static_cast<float>(1.0 - ratio)) {}
  uint8_t operator()(uint8_t x, float y) const {
    const float ax = a * static_cast<float>(x);
    const float by = b * y;
    return to_byte(ax + by);
  }
};

// rgb_to_grayscale on uint8: (0.2989 r + 0.587 g + 0.114 b) truncated.
std::vector<uint8_t> grayscale(const ByteImage& img) {
  const size_t n = size_t(img.height) * img.width;
  std::vector<uint8_t> out(n);
  const uint8_t *r = img.plane(0), *g = img.plane(1), *b = img.plane(2);
  for (size_t i = 0; i < n; ++i) {
    const float vr = 0.2989f * static_cast<float>(r[i]);
    const float vg = 0.587f * static_cast<float>(g[i]);
    const float vb = 0.114f * static_cast<float>(b[i]);
    out[i] = static_cast<uint8_t>((vr + vg) + vb);
  }
  return out;
}

void adjust_brightness(ByteImage& img, double factor) {
  const Blend blend(factor);
  for (auto& v : img.data) v = blend(v, 0.0f);
}

void adjust_saturation(ByteImage& img, double factor) {
  if (img.channels == 1) return;  // torchvision: as PIL
  const std::vector<uint8_t> gray = grayscale(img);
  const Blend blend(factor);
  for (int c = 0; c < img.channels; ++c) {
    uint8_t* p = img.plane(c);
    for (size_t i = 0; i < gray.size(); ++i) p[i] = blend(p[i], gray[i]);
  }
}

void adjust_contrast(ByteImage& img, double factor) {
  // torch.mean of the (truncated) grayscale in float32: the sum of whole
  // numbers is exact below 2^24, then one division.
  int64_t sum = 0;
  size_t n = 0;
  if (img.channels == 3) {
    for (uint8_t v : grayscale(img)) sum += v;
    n = size_t(img.height) * img.width;
  } else {
    for (uint8_t v : img.data) sum += v;
    n = img.data.size();
  }
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const Blend blend(factor);
  for (auto& v : img.data) v = blend(v, mean);
}

void adjust_sharpness(ByteImage& img, double factor) {
  const int h = img.height, w = img.width;
  if (w <= 2 || h <= 2) return;
  // _blurred_degenerate_image: the 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13,
  // rounded; the border keeps the image. S/13 is never k + 0.5 (13 is
  // odd), so rounding the exact quotient equals rounding torch's float.
  const Blend blend(factor);
  for (int c = 0; c < img.channels; ++c) {
    uint8_t* p = img.plane(c);
    std::vector<uint8_t> blurred(p, p + size_t(h) * w);
    for (int y = 1; y < h - 1; ++y) {
      for (int x = 1; x < w - 1; ++x) {
        int s = 4 * p[y * w + x];
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) s += p[(y + dy) * w + x + dx];
        }
        blurred[y * w + x] = static_cast<uint8_t>((2 * s + 13) / 26);
      }
    }
    for (size_t i = 0; i < blurred.size(); ++i) {
      p[i] = blend(p[i], static_cast<float>(blurred[i]));
    }
  }
}

void posterize(ByteImage& img, int bits) {
  const auto mask = static_cast<uint8_t>(-(int64_t{1} << (8 - bits)) & 0xff);
  for (auto& v : img.data) v &= mask;
}

void solarize(ByteImage& img, double threshold) {
  // img >= threshold compares in float32 (the scalar's promoted type).
  const auto t = static_cast<float>(threshold);
  for (auto& v : img.data) {
    if (static_cast<float>(v) >= t) v = static_cast<uint8_t>(255 - v);
  }
}

void autocontrast(ByteImage& img) {
  for (int c = 0; c < img.channels; ++c) {
    uint8_t* p = img.plane(c);
    const size_t n = size_t(img.height) * img.width;
    const auto [lo, hi] = std::minmax_element(p, p + n);
    if (*lo == *hi) continue;  // scale inf: min 0, scale 1, unchanged
    const auto minimum = static_cast<float>(*lo);
    // bound / (max - min) is reciprocal() * bound in torch.
    const float scale = (1.0f / (static_cast<float>(*hi) - minimum)) * 255.0f;
    for (size_t i = 0; i < n; ++i) {
      p[i] = to_byte((static_cast<float>(p[i]) - minimum) * scale);
    }
  }
}

void equalize(ByteImage& img) {
  const size_t n = size_t(img.height) * img.width;
  for (int c = 0; c < img.channels; ++c) {
    uint8_t* p = img.plane(c);
    std::array<int64_t, 256> hist{};
    for (size_t i = 0; i < n; ++i) ++hist[p[i]];
    // step: the sum of the non-zero bins but the last, floor-divided by 255.
    int64_t last = -1, sum = 0;
    for (int v = 0; v < 256; ++v) {
      if (hist[v] == 0) continue;
      if (last >= 0) sum += hist[last];
      last = v;
    }
    const int64_t step = sum / 255;
    if (step == 0) continue;
    std::array<uint8_t, 256> lut{};
    int64_t cumsum = 0;
    for (int v = 0; v < 255; ++v) {
      cumsum += hist[v];
      lut[v + 1] = static_cast<uint8_t>(std::clamp<int64_t>((cumsum + step / 2) / step, 0, 255));
    }
    for (size_t i = 0; i < n; ++i) p[i] = lut[p[i]];
  }
}

void invert(ByteImage& img) {
  for (auto& v : img.data) v = static_cast<uint8_t>(255 - v);
}

// torchvision's _get_inverse_affine_matrix (scale 1), in double.
std::array<double, 6> inverse_affine(double cx, double cy, double angle, double tx, double ty,
                                     double shear_x, double shear_y) {
  const double rot = radians(angle);
  const double sx = radians(shear_x);
  const double sy = radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// _gen_affine_grid + grid_sample(nearest, zeros, align_corners=False), in
// torch's float32 steps: theta rescaled by (w/2, h/2); the grid point is
// the product with (x, y, 1) as the BLAS kernel forms it (x*a, then a
// fused multiply-add of y*b, then + c); unnormalized as (g + 1) * size/2
// - 0.5 and rounded half to even.
void warp_nearest(ByteImage& img, const std::array<double, 6>& matrix) {
  const int width = img.width, height = img.height;
  const auto half_w = static_cast<float>(0.5 * width);
  const auto half_h = static_cast<float>(0.5 * height);
  float coeffs[6];
  for (int i = 0; i < 6; ++i) coeffs[i] = static_cast<float>(matrix[i]);
  const float ax = coeffs[0] / half_w, bx = coeffs[1] / half_w, cx = coeffs[2] / half_w;
  const float ay = coeffs[3] / half_h, by = coeffs[4] / half_h, cy = coeffs[5] / half_h;
  const auto x0 = static_cast<float>(-width * 0.5 + 0.5);
  const auto y0 = static_cast<float>(-height * 0.5 + 0.5);
  const float scale_w = static_cast<float>(width) / 2, scale_h = static_cast<float>(height) / 2;
  ByteImage out = img;
  std::fill(out.data.begin(), out.data.end(), uint8_t{0});
  const size_t plane = size_t(width) * height;
  for (int row = 0; row < height; ++row) {
    const float yb = y0 + static_cast<float>(row);
    for (int col = 0; col < width; ++col) {
      const float xb = x0 + static_cast<float>(col);
      const float gx = std::fma(yb, bx, xb * ax) + cx;
      const float gy = std::fma(yb, by, xb * ay) + cy;
      const float sx = std::nearbyint((gx + 1.0f) * scale_w - 0.5f);
      const float sy = std::nearbyint((gy + 1.0f) * scale_h - 0.5f);
      if (!(sx >= 0 && sx < width && sy >= 0 && sy < height)) continue;
      const size_t from = size_t(sy) * width + size_t(sx);
      const size_t to = size_t(row) * width + col;
      for (int channel = 0; channel < img.channels; ++channel) {
        out.data[channel * plane + to] = img.data[channel * plane + from];
      }
    }
  }
  img = std::move(out);
}

}  // namespace

const char* augment_op_name(AugmentOp op) {
  switch (op) {
    case AugmentOp::kIdentity:
      return "Identity";
    case AugmentOp::kShearX:
      return "ShearX";
    case AugmentOp::kShearY:
      return "ShearY";
    case AugmentOp::kTranslateX:
      return "TranslateX";
    case AugmentOp::kTranslateY:
      return "TranslateY";
    case AugmentOp::kRotate:
      return "Rotate";
    case AugmentOp::kBrightness:
      return "Brightness";
    case AugmentOp::kColor:
      return "Color";
    case AugmentOp::kContrast:
      return "Contrast";
    case AugmentOp::kSharpness:
      return "Sharpness";
    case AugmentOp::kPosterize:
      return "Posterize";
    case AugmentOp::kSolarize:
      return "Solarize";
    case AugmentOp::kAutoContrast:
      return "AutoContrast";
    case AugmentOp::kEqualize:
      return "Equalize";
    case AugmentOp::kInvert:
      return "Invert";
  }
  return "?";
}

void apply_augment_op(ByteImage& img, AugmentOp op, double magnitude) {
  const double width = img.width, height = img.height;
  switch (op) {
    case AugmentOp::kIdentity:
      return;
    case AugmentOp::kShearX:  // about the top-left corner: center [0, 0]
      return warp_nearest(img, inverse_affine(0 - width * 0.5, 0 - height * 0.5, 0.0, 0.0, 0.0,
                                              degrees(std::atan(magnitude)), 0.0));
    case AugmentOp::kShearY:
      return warp_nearest(img, inverse_affine(0 - width * 0.5, 0 - height * 0.5, 0.0, 0.0, 0.0, 0.0,
                                              degrees(std::atan(magnitude))));
    case AugmentOp::kTranslateX:
      return warp_nearest(img, inverse_affine(0.0, 0.0, 0.0, std::trunc(magnitude), 0.0, 0.0, 0.0));
    case AugmentOp::kTranslateY:
      return warp_nearest(img, inverse_affine(0.0, 0.0, 0.0, 0.0, std::trunc(magnitude), 0.0, 0.0));
    case AugmentOp::kRotate:  // F.rotate passes -angle to the matrix
      return warp_nearest(img, inverse_affine(0.0, 0.0, -magnitude, 0.0, 0.0, 0.0, 0.0));
    case AugmentOp::kBrightness:
      return adjust_brightness(img, 1.0 + magnitude);
    case AugmentOp::kColor:
      return adjust_saturation(img, 1.0 + magnitude);
    case AugmentOp::kContrast:
      return adjust_contrast(img, 1.0 + magnitude);
    case AugmentOp::kSharpness:
      return adjust_sharpness(img, 1.0 + magnitude);
    case AugmentOp::kPosterize:
      return posterize(img, static_cast<int>(magnitude));
    case AugmentOp::kSolarize:
      return solarize(img, magnitude);
    case AugmentOp::kAutoContrast:
      return autocontrast(img);
    case AugmentOp::kEqualize:
      return equalize(img);
    case AugmentOp::kInvert:
      return invert(img);
  }
}

namespace {

// torch.linspace(lo, hi, n) as float32, to within one rounding.
std::vector<double> linspace(double lo, double hi, int n) {
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) {
    const double v = n == 1 ? lo : lo + (hi - lo) * i / (n - 1);
    out[i] = static_cast<float>(v);
  }
  return out;
}

// 8 - (arange(n) / ((n - 1) / divisor)).round().int(), in float32 with
// torch.round's half to even.
std::vector<double> posterize_bins(int n, double divisor) {
  std::vector<double> out(n);
  const auto d = static_cast<float>((n - 1) / divisor);
  for (int i = 0; i < n; ++i) out[i] = 8 - std::nearbyint(static_cast<float>(i) / d);
  return out;
}

using Op = AugmentOp;

}  // namespace

std::vector<std::string> augment_policy_names() {
  return {"none", "autoaugment_imagenet", "randaugment", "trivialaugment"};
}

std::vector<AugmentSpaceEntry> augmentation_space(const std::string& policy, int num_bins,
                                                  int height, int width) {
  if (policy == "trivialaugment") {
    return {{Op::kIdentity, {}, false},
            {Op::kShearX, linspace(0.0, 0.99, num_bins), true},
            {Op::kShearY, linspace(0.0, 0.99, num_bins), true},
            {Op::kTranslateX, linspace(0.0, 32.0, num_bins), true},
            {Op::kTranslateY, linspace(0.0, 32.0, num_bins), true},
            {Op::kRotate, linspace(0.0, 135.0, num_bins), true},
            {Op::kBrightness, linspace(0.0, 0.99, num_bins), true},
            {Op::kColor, linspace(0.0, 0.99, num_bins), true},
            {Op::kContrast, linspace(0.0, 0.99, num_bins), true},
            {Op::kSharpness, linspace(0.0, 0.99, num_bins), true},
            {Op::kPosterize, posterize_bins(num_bins, 6), false},
            {Op::kSolarize, linspace(255.0, 0.0, num_bins), false},
            {Op::kAutoContrast, {}, false},
            {Op::kEqualize, {}, false}};
  }
  const int bins = policy == "autoaugment_imagenet" ? 10 : num_bins;
  std::vector<AugmentSpaceEntry> space = {
      {Op::kIdentity, {}, false},
      {Op::kShearX, linspace(0.0, 0.3, bins), true},
      {Op::kShearY, linspace(0.0, 0.3, bins), true},
      {Op::kTranslateX, linspace(0.0, 150.0 / 331.0 * width, bins), true},
      {Op::kTranslateY, linspace(0.0, 150.0 / 331.0 * height, bins), true},
      {Op::kRotate, linspace(0.0, 30.0, bins), true},
      {Op::kBrightness, linspace(0.0, 0.9, bins), true},
      {Op::kColor, linspace(0.0, 0.9, bins), true},
      {Op::kContrast, linspace(0.0, 0.9, bins), true},
      {Op::kSharpness, linspace(0.0, 0.9, bins), true},
      {Op::kPosterize, posterize_bins(bins, 4), false},
      {Op::kSolarize, linspace(255.0, 0.0, bins), false},
      {Op::kAutoContrast, {}, false},
      {Op::kEqualize, {}, false}};
  if (policy == "autoaugment_imagenet") {
    // AutoAugment's space has no Identity and adds Invert.
    space.erase(space.begin());
    space.push_back({Op::kInvert, {}, false});
  }
  return space;
}

const std::vector<std::pair<AutoAugmentStep, AutoAugmentStep>>& autoaugment_imagenet_policy() {
  static const std::vector<std::pair<AutoAugmentStep, AutoAugmentStep>> kPolicy = {
      {{Op::kPosterize, 0.4, 8}, {Op::kRotate, 0.6, 9}},
      {{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}},
      {{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}},
      {{Op::kPosterize, 0.6, 7}, {Op::kPosterize, 0.6, 6}},
      {{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}},
      {{Op::kEqualize, 0.4, -1}, {Op::kRotate, 0.8, 8}},
      {{Op::kSolarize, 0.6, 3}, {Op::kEqualize, 0.6, -1}},
      {{Op::kPosterize, 0.8, 5}, {Op::kEqualize, 1.0, -1}},
      {{Op::kRotate, 0.2, 3}, {Op::kSolarize, 0.6, 8}},
      {{Op::kEqualize, 0.6, -1}, {Op::kPosterize, 0.4, 6}},
      {{Op::kRotate, 0.8, 8}, {Op::kColor, 0.4, 0}},
      {{Op::kRotate, 0.4, 9}, {Op::kEqualize, 0.6, -1}},
      {{Op::kEqualize, 0.0, -1}, {Op::kEqualize, 0.8, -1}},
      {{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}},
      {{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}},
      {{Op::kRotate, 0.8, 8}, {Op::kColor, 1.0, 2}},
      {{Op::kColor, 0.8, 8}, {Op::kSolarize, 0.8, 7}},
      {{Op::kSharpness, 0.4, 7}, {Op::kInvert, 0.6, -1}},
      {{Op::kShearX, 0.6, 5}, {Op::kEqualize, 1.0, -1}},
      {{Op::kColor, 0.4, 0}, {Op::kEqualize, 0.6, -1}},
      {{Op::kEqualize, 0.4, -1}, {Op::kSolarize, 0.2, 4}},
      {{Op::kSolarize, 0.6, 5}, {Op::kAutoContrast, 0.6, -1}},
      {{Op::kInvert, 0.6, -1}, {Op::kEqualize, 1.0, -1}},
      {{Op::kColor, 0.6, 4}, {Op::kContrast, 1.0, 8}},
      {{Op::kEqualize, 0.8, -1}, {Op::kEqualize, 0.6, -1}},
  };
  return kPolicy;
}

namespace {

constexpr int kRandAugmentBins = 31;
constexpr int kTrivialAugmentBins = 31;

const AugmentSpaceEntry& find_op(const std::vector<AugmentSpaceEntry>& space, AugmentOp op) {
  for (const auto& e : space) {
    if (e.op == op) return e;
  }
  throw std::logic_error("augmentation space without its op");
}

int draw(std::mt19937_64& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

// AutoAugment.forward: a sub-policy, two probabilities, two signs (sign 0
// negates), each step applied when its probability draw is <= p.
void autoaugment(ByteImage& img, std::mt19937_64& rng) {
  const auto& policy = autoaugment_imagenet_policy();
  const auto& sub = policy[draw(rng, static_cast<int>(policy.size()))];
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double probs[2] = {unit(rng), unit(rng)};
  const int signs[2] = {draw(rng, 2), draw(rng, 2)};
  const auto space = augmentation_space("autoaugment_imagenet", 10, img.height, img.width);
  const AutoAugmentStep steps[2] = {sub.first, sub.second};
  for (int i = 0; i < 2; ++i) {
    if (!(probs[i] <= steps[i].probability)) continue;
    const auto& e = find_op(space, steps[i].op);
    double magnitude = steps[i].magnitude_bin >= 0 ? e.magnitudes[steps[i].magnitude_bin] : 0.0;
    if (e.is_signed && signs[i] == 0) magnitude = -magnitude;
    apply_augment_op(img, steps[i].op, magnitude);
  }
}

// RandAugment.forward: num_ops ops drawn with replacement, all at bin
// `magnitude`; a signed op is negated when its coin is 1.
void randaugment(ByteImage& img, std::mt19937_64& rng, int num_ops, int magnitude) {
  const auto space = augmentation_space("randaugment", kRandAugmentBins, img.height, img.width);
  for (int k = 0; k < num_ops; ++k) {
    const auto& e = space[draw(rng, static_cast<int>(space.size()))];
    double m = e.magnitudes.empty() ? 0.0 : e.magnitudes[magnitude];
    if (e.is_signed && draw(rng, 2) == 1) m = -m;
    apply_augment_op(img, e.op, m);
  }
}

// TrivialAugmentWide.forward: one op, one bin drawn uniformly.
void trivialaugment(ByteImage& img, std::mt19937_64& rng) {
  const auto space =
      augmentation_space("trivialaugment", kTrivialAugmentBins, img.height, img.width);
  const auto& e = space[draw(rng, static_cast<int>(space.size()))];
  double m = 0.0;
  if (!e.magnitudes.empty()) m = e.magnitudes[draw(rng, static_cast<int>(e.magnitudes.size()))];
  if (e.is_signed && draw(rng, 2) == 1) m = -m;
  apply_augment_op(img, e.op, m);
}

}  // namespace

AugmentFn make_augment(const AugmentOptions& o) {
  if (!(o.random_erasing_prob >= 0.0 && o.random_erasing_prob <= 1.0)) {
    throw ConfigError("random_erasing_prob: " + std::to_string(o.random_erasing_prob) +
                      " is not in [0, 1]");
  }
  if (o.policy == "none") return {};
  if (o.policy == "autoaugment_imagenet") return autoaugment;
  if (o.policy == "trivialaugment") return trivialaugment;
  if (o.policy == "randaugment") {
    if (o.randaugment_num_ops < 0) {
      throw ConfigError("randaugment_num_ops: " + std::to_string(o.randaugment_num_ops) +
                        " is negative");
    }
    if (o.randaugment_magnitude < 0 || o.randaugment_magnitude >= kRandAugmentBins) {
      throw ConfigError("randaugment_magnitude: " + std::to_string(o.randaugment_magnitude) +
                        " is not a bin of 0.." + std::to_string(kRandAugmentBins - 1));
    }
    const int num_ops = o.randaugment_num_ops, magnitude = o.randaugment_magnitude;
    return [num_ops, magnitude](ByteImage& img, std::mt19937_64& rng) {
      randaugment(img, rng, num_ops, magnitude);
    };
  }
  throw ConfigError("augment_policy: '" + o.policy +
                    "' is not a policy; available: " + join_list(augment_policy_names()));
}

void random_erase(float* chw, const OutputShape& shape, double p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (!(unit(rng) < p)) return;
  const int img_h = shape.height, img_w = shape.width;
  const double area = double(img_h) * img_w;
  std::uniform_real_distribution<double> scale(0.02, 0.33);
  std::uniform_real_distribution<double> log_ratio(std::log(0.3), std::log(3.3));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * scale(rng);
    const double aspect = std::exp(log_ratio(rng));
    // Python's round(): half to even.
    const int h = static_cast<int>(std::nearbyint(std::sqrt(erase_area * aspect)));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(h < img_h && w < img_w)) continue;
    const int top = std::uniform_int_distribution<int>(0, img_h - h)(rng);
    const int left = std::uniform_int_distribution<int>(0, img_w - w)(rng);
    for (int c = 0; c < shape.channels; ++c) {
      for (int y = top; y < top + h; ++y) {
        float* row = chw + (size_t(c) * img_h + y) * img_w + left;
        std::fill(row, row + w, 0.0f);
      }
    }
    return;
  }
}

namespace {
ByteImage empty_bytes(int channels, int height, int width) {
  ByteImage img;
  img.channels = channels;
  img.height = height;
  img.width = width;
  img.data.resize(size_t(channels) * height * width);
  return img;
}
}  // namespace

ByteImage bytes_from_chw(const float* chw, int channels, int height, int width) {
  ByteImage img = empty_bytes(channels, height, width);
  for (size_t i = 0; i < img.data.size(); ++i) {
    img.data[i] = round_to_byte(chw[i]);
  }
  return img;
}

void bytes_to_chw(const ByteImage& img, float* chw) {
  for (size_t i = 0; i < img.data.size(); ++i) chw[i] = static_cast<float>(img.data[i]);
}

template <typename T>
void augment_hwc(T* hwc, int channels, int height, int width, const AugmentFn& augment,
                 std::mt19937_64& rng) {
  ByteImage img = empty_bytes(channels, height, width);
  const size_t plane = size_t(height) * width;
  for (size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < channels; ++c)
      img.data[c * plane + i] = round_to_byte(hwc[i * channels + c]);
  }
  augment(img, rng);
  for (size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < channels; ++c)
      hwc[i * channels + c] = static_cast<T>(img.data[c * plane + i]);
  }
}

template void augment_hwc<float>(float*, int, int, int, const AugmentFn&, std::mt19937_64&);
template void augment_hwc<uint8_t>(uint8_t*, int, int, int, const AugmentFn&, std::mt19937_64&);

}  // namespace fastnn::preprocessing
