// torchvision's automatic augmentation policies (transforms/autoaugment.py:
// AutoAugment with the ImageNet policy, RandAugment, TrivialAugmentWide) and
// random erasing (transforms.RandomErasing), for the training preprocessing.
//
// The policies work on a uint8 CHW image, as torchvision's tensor ops do,
// with its operation sets, magnitude bins and value ranges, nearest
// interpolation and fill 0. Each op follows torchvision 0.14's tensor
// functional ops (functional_tensor.py) step by step, in its float32
// arithmetic, so that the same op at the same magnitude gives the same
// pixels (tests/preprocessing/torchvision_parity.py checks every op).
// The random draws (which sub-policy, op, sign, bin) come from the
// preprocessing's per-example generator, so a resumed run repeats them.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fastnn/preprocess.h"

namespace fastnn::preprocessing {

/// uint8 image, CHW (torchvision's tensor layout).
struct ByteImage {
  int channels = 0, height = 0, width = 0;
  std::vector<uint8_t> data;
  uint8_t* plane(int c) { return data.data() + size_t(c) * height * width; }
  const uint8_t* plane(int c) const { return data.data() + size_t(c) * height * width; }
};

/// torchvision's _apply_op names, in RandAugment's augmentation-space order
/// (Invert last: only AutoAugment's policies use it).
enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};

/// "ShearX", "Equalize", ... (torchvision's spelling).
const char* augment_op_name(AugmentOp op);

/// torchvision's _apply_op: `op` at `magnitude` on `img`, in place.
/// Shear: shear angle atan(magnitude) about the top-left corner;
/// Translate: int(magnitude) pixels; Rotate: magnitude degrees
/// counter-clockwise about the centre; Brightness, Color, Contrast,
/// Sharpness: factor 1 + magnitude; Posterize: int(magnitude) bits kept;
/// Solarize: threshold magnitude. REQUIRES: 1 or 3 channels.
void apply_augment_op(ByteImage& img, AugmentOp op, double magnitude);

/// One op of a policy's augmentation space: its magnitude bins (empty for
/// ops without a magnitude) and whether a random sign applies.
struct AugmentSpaceEntry {
  AugmentOp op;
  std::vector<double> magnitudes;
  bool is_signed = false;
};

/// The policy names of augment_policy, "none" first.
std::vector<std::string> augment_policy_names();

/// The augmentation space of `policy` (autoaugment_imagenet: 10 bins;
/// randaugment: `num_bins`; trivialaugment: `num_bins`) for an image of
/// height x width, in torchvision's order. Magnitudes are torchvision's
/// float32 linspace values to within one float32 rounding.
std::vector<AugmentSpaceEntry> augmentation_space(const std::string& policy, int num_bins,
                                                  int height, int width);

/// One step of an AutoAugment sub-policy: op, probability, magnitude bin
/// (-1: the op has none).
struct AutoAugmentStep {
  AugmentOp op;
  double probability;
  int magnitude_bin;
};

/// AutoAugment's 25 ImageNet sub-policies of two steps each.
const std::vector<std::pair<AutoAugmentStep, AutoAugmentStep>>& autoaugment_imagenet_policy();

/// What the training preprocessing adds to TF-slim's (hparams
/// augment_policy, randaugment_num_ops, randaugment_magnitude,
/// random_erasing_prob).
struct AugmentOptions {
  /// none, autoaugment_imagenet, randaugment or trivialaugment.
  std::string policy = "none";
  /// RandAugment's ops per image. REQUIRES: >= 0.
  int randaugment_num_ops = 2;
  /// RandAugment's bin of 31 (0..30).
  int randaugment_magnitude = 9;
  /// Probability of erasing one random rectangle of the network input
  /// (scale [0.02, 0.33], aspect ratio [0.3, 3.3], value 0).
  double random_erasing_prob = 0.0;
};

/// A policy applied to one image with the example's generator.
using AugmentFn = std::function<void(ByteImage& img, std::mt19937_64& rng)>;

/// The policy of `options`; empty for "none". Throws ConfigError naming
/// the key for a bad name or value.
AugmentFn make_augment(const AugmentOptions& options);

/// torchvision's RandomErasing(p, scale=(0.02, 0.33), ratio=(0.3, 3.3),
/// value=0) on a CHW float image: with probability p, up to 10 tries to
/// draw a rectangle that fits; the first that does is set to 0.
void random_erase(float* chw, const OutputShape& shape, double p, std::mt19937_64& rng);

/// Float CHW planes (pixel values 0..255) to bytes: rounded to nearest,
/// clamped to [0, 255].
ByteImage bytes_from_chw(const float* chw, int channels, int height, int width);
/// Bytes back to float CHW planes.
void bytes_to_chw(const ByteImage& img, float* chw);

/// Runs `augment` in place on an HWC image of uint8_t, or of float pixel
/// values 0..255 (rounded and clamped to bytes first).
template <typename T>
void augment_hwc(T* hwc, int channels, int height, int width, const AugmentFn& augment,
                 std::mt19937_64& rng);

}  // namespace fastnn::preprocessing
