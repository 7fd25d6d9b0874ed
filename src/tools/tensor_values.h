// A checkpoint tensor's values as TensorFlow's inspect_checkpoint prints
// them (numpy's layout: nested brackets, long tensors summarised).
#pragma once

#include <cstdint>
#include <string>

namespace fastnn::tools {

/// numpy's print options that inspect_checkpoint --printoptions takes.
struct PrintOptions {
  /// More elements than this: each dimension shows edgeitems at each end.
  int64_t threshold = 1000;
  int64_t edgeitems = 3;
  /// Significant digits of a floating-point value.
  int precision = 8;
};

/// Parses "threshold=N,edgeitems=N,precision=N" (any of them, any order).
/// Throws ConfigError naming the bad item.
PrintOptions parse_print_options(const std::string& text);

/// The values of tensor `name` in the checkpoint `path` (resolve_checkpoint's;
/// a TensorFlow checkpoint's in its own layout, as TensorFlow prints them).
/// Throws ConfigError for a name the checkpoint lacks, DataError for bytes
/// that cannot be read.
std::string tensor_values(const std::string& path, const std::string& name,
                          const PrintOptions& options);

}  // namespace fastnn::tools
