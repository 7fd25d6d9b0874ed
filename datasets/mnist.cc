#include "datasets/mnist.h"

namespace fastnn::datasets {

DatasetSpec mnist_spec() {
  return {"mnist", "mnist", {{"train", 60000}, {"test", 10000}}, 10, 1, DatasetSource::kTFRecord,
          ""};
}

DatasetSpec fashion_mnist_spec() {
  return {"fashion_mnist",          "mnist", {{"train", 60000}, {"test", 10000}}, 10, 1,
          DatasetSource::kTFRecord, ""};
}

const std::vector<std::string>& mnist_class_names() {
  // TF-slim writes 'size' for six; the typo is not carried over.
  static const std::vector<std::string> kNames = {"zero", "one", "two",   "three", "four",
                                                  "five", "six", "seven", "eight", "nine"};
  return kNames;
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> kNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};
  return kNames;
}

}  // namespace fastnn::datasets
