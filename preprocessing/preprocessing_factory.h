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

#include "fastnn/image.h"

namespace fastnn::preprocessing {

/// Output geometry of a preprocessing function.
struct OutputShape {
  int channels = 3;
  int height = 224;
  int width = 224;
  int64_t numel() const {
    return int64_t{channels} * height * width;
  }
};

/// One encoded image as it comes out of a record.
struct EncodedImage {
  /// PNG or JPEG bytes; the format is sniffed from them.
  std::string_view bytes;
  /// Channels to decode to: 1 gray, 3 RGB, 0 as stored.
  int channels = 3;
};

/// Choices that change how images are decoded, not what the model sees.
struct PreprocessOptions {
  /// Inception decodes only its crop, at the smallest JPEG DCT scale that
  /// keeps the crop at least the output size. Default: true
  /// (hparams fast_jpeg_decode).
  bool fast_jpeg_decode = true;
};

/// Decodes `in` and writes shape.numel() floats (CHW) to `out`. `rng`
/// drives the random transforms of training; eval variants ignore it.
/// Throws DataError for undecodable bytes or a channel mismatch.
using PreprocessFn = std::function<void(
    const EncodedImage& in, std::mt19937_64& rng, float* out)>;

/// The function named `name` for `shape`, train or eval variant. Throws
/// ConfigError listing the valid names.
PreprocessFn get_preprocessing(const std::string& name,
                               const OutputShape& shape,
                               bool is_training,
                               const PreprocessOptions& options = {});

/// Registered names, in table order.
std::vector<std::string> preprocessing_names();

}  // namespace fastnn::preprocessing
