// Converts MNIST-format idx files (plain or .gz) to TF-slim's mnist layout:
//   <out>/mnist_train.tfrecord, <out>/mnist_test.tfrecord, <out>/labels.txt
// (sharded names with num_shards > 1; see convert_common.h). Inputs looked
// up in the input folder: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz].
// Images become 28x28x1 PNG records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/convert_common.h"

namespace fastnn::datasets {

/// Runs the conversion (prefix "mnist" unless options.prefix is set);
/// throws DataError for unreadable or malformed input, ConfigError for
/// existing outputs without overwrite.
std::vector<ConvertedSplit> convert_mnist(const ConvertOptions& options);

/// An idx file's contents: dims and the raw uint8 payload.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads an idx file (gzip-compressed or not); DataError when malformed.
IdxArray read_idx(const std::string& path);

}  // namespace fastnn::datasets
