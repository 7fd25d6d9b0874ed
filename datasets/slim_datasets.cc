#include "datasets/slim_datasets.h"

namespace fastnn::datasets {

namespace {
// Five-digit shard numbers, as TF-slim's and TensorFlow's converters write.
constexpr const char* kShard = "[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]";
}  // namespace

DatasetSpec cifar10_spec() {
  DatasetSpec s{"cifar10", "cifar10", {{"train", 50000}, {"test", 10000}}, 10, 3};
  s.file_pattern = "cifar10_%s.tfrecord";
  return s;
}

DatasetSpec flowers_spec() {
  DatasetSpec s{"flowers", "flowers", {{"train", 3320}, {"validation", 350}}, 5, 3};
  s.file_pattern = std::string("flowers_%s_") + kShard + ".tfrecord";
  return s;
}

DatasetSpec imagenet_spec() {
  DatasetSpec s{"imagenet", "", {{"train", 1281167}, {"validation", 50000}}, 1001, 3};
  s.file_pattern = std::string("%s-") + kShard;
  return s;
}

}  // namespace fastnn::datasets
