// The model name table (TF-slim's networks_map): one row per network.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/classifier.h"

namespace fastnn::models {

struct ModelSpec {
  std::string name;
  /// TF-slim's default_image_size.
  int64_t default_image_size;
  /// TF-slim's preprocessing for this network (preprocessing_factory).
  std::string preprocessing;
  std::function<std::shared_ptr<ClassifierImpl>(const ModelOptions&)> create;
  /// TF-slim's dropout_keep_prob default for this network (training).
  double dropout_keep_prob = 0.5;
  /// The network takes default_image_size images only (lenet: 28x28);
  /// a different train_image_size is a configuration error.
  bool fixed_image_size = false;
};

/// The row for `name`; throws ConfigError listing the valid names.
const ModelSpec& find_model(const std::string& name);

/// Every registered name, in table order.
std::vector<std::string> model_names();

/// TF-slim's model_analyzer table: one line per variable (name, shape in
/// TF's order, size, bytes) and the totals.
std::string model_statistics_table(ClassifierImpl& model);

/// Parameter count and a one-line summary for --dry_run.
std::string describe_model(ClassifierImpl& model);

}  // namespace fastnn::models
