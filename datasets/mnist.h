// MNIST and Fashion-MNIST in TF-slim's mnist layout:
//   mnist_train.tfrecord (60000), mnist_test.tfrecord (10000), labels.txt
// Records: PNG-encoded 28x28x1, image/class/label int64, image/format 'png'.
#pragma once

#include "datasets/dataset_factory.h"

namespace fastnn::datasets {

DatasetSpec mnist_spec();
DatasetSpec fashion_mnist_spec();

/// Class names written to labels.txt by the converter.
const std::vector<std::string>& mnist_class_names();
const std::vector<std::string>& fashion_mnist_class_names();

}  // namespace fastnn::datasets
