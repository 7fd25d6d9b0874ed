// The seam between the input pipeline and preprocessing: what a
// preprocessing function receives (one encoded image), what it produces
// (float CHW of a fixed shape, written into the batch's memory), and its
// type. preprocessing/preprocessing_factory.h makes them by name.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string_view>

namespace fastnn::io {
struct Image;
}

namespace fastnn::preprocessing {

/// Output geometry of a preprocessing function.
struct OutputShape {
  int channels = 3;
  int height = 224;
  int width = 224;
  int64_t numel() const { return int64_t{channels} * height * width; }
};

/// One encoded image as it comes out of a record.
struct EncodedImage {
  /// PNG or JPEG bytes; the format is sniffed from them.
  std::string_view bytes;
  /// Channels to decode to: 1 gray, 3 RGB, 0 as stored.
  int channels = 3;
};

/// Decodes `in` and writes shape.numel() floats (CHW) to `out`. `rng`
/// drives the random transforms of training; eval variants ignore it.
/// Throws DataError for undecodable bytes or a channel mismatch.
using PreprocessFn = std::function<void(const EncodedImage& in, std::mt19937_64& rng, float* out)>;

/// The same function on an image already decoded whole (uint8 HWC, the
/// channels asked), for a pipeline that keeps decoded images in memory
/// (datasets_use_caching). Never modifies `in`. For inception it gives what
/// PreprocessFn gives with fast_jpeg_decode off (the whole image decoded).
using DecodedPreprocessFn =
    std::function<void(const io::Image& in, std::mt19937_64& rng, float* out)>;

}  // namespace fastnn::preprocessing
