// Converts CIFAR-10's binary distribution (cifar-10-binary.tar.gz, unpacked)
// to TF-slim's cifar10 layout:
//   <out>/cifar10_train.tfrecord  data_batch_1.bin .. data_batch_5.bin
//   <out>/cifar10_test.tfrecord   test_batch.bin
//   <out>/labels.txt              from batches.meta.txt, else the standard
//                                 names airplane .. truck
// (sharded names with num_shards > 1; see convert_common.h). The input
// folder may be the unpacked cifar-10-batches-bin/ or its parent. Each
// input record is 1 label byte and 3072 pixel bytes (1024 R, 1024 G,
// 1024 B, rows top to bottom); each output record is a 32x32x3 PNG with
// TF-slim's keys (image/encoded, image/format "png", image/class/label,
// image/height, image/width).
#pragma once

#include <string>
#include <vector>

#include "datasets/convert_common.h"

namespace fastnn::datasets {

/// CIFAR-10's class names in label order.
const std::vector<std::string>& cifar10_standard_names();

/// Runs the conversion (prefix "cifar10" unless options.prefix is set);
/// DataError for a missing or malformed batch file.
std::vector<ConvertedSplit> convert_cifar10(const ConvertOptions& options);

}  // namespace fastnn::datasets
