// tf.train.Example records holding one image, in TF-slim's feature layout:
//
//   image/encoded      bytes_list  [PNG or JPEG bytes]
//   image/format       bytes_list  ["png" | "jpeg"]
//   image/class/label  int64_list  [label]
//   image/height       int64_list  [height]
//   image/width        int64_list  [width]
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fastnn::io {

/// One image-classification example as stored in a TFRecord.
struct ImageRecord {
  /// Encoded image bytes (PNG or JPEG).
  std::string encoded;
  /// Declared format, e.g. "png"; informational (decoding sniffs the bytes).
  std::string format;
  /// Class id as written by the converter; labels.txt names each id.
  int64_t label = 0;
  /// Pixel size as declared by the writer; 0 when absent.
  int64_t height = 0;
  /// See height.
  int64_t width = 0;
};

/// Feature keys to read; the defaults are TF-slim's.
struct ExampleKeys {
  std::string encoded = "image/encoded";
  std::string format = "image/format";
  std::string label = "image/class/label";
  std::string height = "image/height";
  std::string width = "image/width";
};

/// Serializes r as a tf.train.Example with TF-slim's keys. Deterministic:
/// equal records give equal bytes.
std::string encode_image_example(const ImageRecord& r);

/// Parses a serialized tf.train.Example. encoded and label are required
/// (each a list of exactly one value); format, height and width are optional.
/// Throws DataError naming the offending feature.
ImageRecord decode_image_example(std::string_view bytes, const ExampleKeys& keys = {});

}  // namespace fastnn::io
