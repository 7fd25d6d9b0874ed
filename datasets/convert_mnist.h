// Converts MNIST-format idx files (plain or .gz) to TF-slim's mnist layout:
//   <out>/mnist_train.tfrecord, <out>/mnist_test.tfrecord, <out>/labels.txt
// Inputs looked up in the input folder: {train,t10k}-{images-idx3,
// labels-idx1}-ubyte[.gz]. Images become 28x28x1 PNG records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::datasets {

struct ConvertOptions {
  std::string input_dir;
  std::string output_dir;
  /// Class names written to labels.txt.
  std::vector<std::string> class_names;
  /// Re-create outputs that already exist (otherwise they are kept).
  bool overwrite = false;
  int num_threads = 2;
  /// Convert only the first N examples of each split (0 = all).
  int64_t max_examples = 0;
};

/// Per-split result of a conversion.
struct ConvertedSplit {
  std::string split;
  std::string path;
  int64_t examples = 0;
  bool skipped_existing = false;
};

/// Runs the conversion; throws DataError for unreadable or malformed input.
std::vector<ConvertedSplit> convert_mnist(const ConvertOptions& options);

/// An idx file's contents: dims and the raw uint8 payload.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads an idx file (gzip-compressed or not); DataError when malformed.
IdxArray read_idx(const std::string& path);

}  // namespace fastnn::datasets
