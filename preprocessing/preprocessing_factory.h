// The preprocessing name table (TF-slim's preprocessing_factory). A
// preprocessing function turns one encoded image (PNG or JPEG bytes) into the
// network's input: float, CHW, written straight into the batch tensor's
// memory. It decodes the image itself, so it can decode only what it needs
// (inception: the crop, DCT-downscaled; see docs/io.md).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fastnn/preprocess.h"
#include "preprocessing/augment.h"
#include "src/io/image.h"

namespace fastnn::preprocessing {

/// Choices that change how images are decoded, not what the model sees.
struct PreprocessOptions {
  /// Inception decodes only its crop, at the smallest JPEG DCT scale that
  /// keeps the crop at least the output size. Default: true
  /// (hparams fast_jpeg_decode).
  bool fast_jpeg_decode = true;
  /// Training only: the augmentation policy (on uint8, after the random
  /// crop and flip) and random erasing (on the finished input). Default:
  /// none, which leaves TF-slim's numbers bit for bit.
  AugmentOptions augment;
};

/// The function named `name` for `shape`, train or eval variant. Throws
/// ConfigError listing the valid names.
PreprocessFn get_preprocessing(const std::string& name, const OutputShape& shape, bool is_training,
                               const PreprocessOptions& options = {});

/// The decoded-image form of get_preprocessing(name, ...): the same
/// output from an image decode_image already made (inception: as with
/// fast_jpeg_decode off). Throws as get_preprocessing does.
DecodedPreprocessFn get_decoded_preprocessing(const std::string& name, const OutputShape& shape,
                                              bool is_training,
                                              const PreprocessOptions& options = {});

/// Registered names, in table order.
std::vector<std::string> preprocessing_names();

}  // namespace fastnn::preprocessing
