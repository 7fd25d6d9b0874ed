// The dataset name table. A dataset resolves (hparams, split) to the
// TF-slim-layout files to read and what is known about them.
//
// On disk (TF-slim's layout):
//   dataset_dir/<prefix>_<split>[_NNNNN-of-NNNNN].tfrecord
//   dataset_dir/labels.txt          "<id>:<name>" a line
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastnn {
struct HParams;
}

namespace fastnn::datasets {

struct DatasetInfo {
  std::string name;
  std::string split;
  /// TFRecord files of the split, sorted.
  std::vector<std::string> files;
  /// Samples in the split as the dataset defines it (0 = unknown).
  int64_t num_samples = 0;
  int64_t num_classes = 0;
  /// Channels images are decoded to (1 for MNIST-style, 3 for RGB).
  int channels = 3;
  /// Class names from labels.txt (empty when absent).
  std::vector<std::string> labels;
  /// Synthetic data (dataset "mock"): no files, images made in memory.
  bool synthetic = false;
};

/// Static facts of one dataset (one row of the name table).
struct DatasetSpec {
  std::string name;
  std::string file_prefix;
  std::vector<std::pair<std::string, int64_t>> splits;
  int64_t num_classes;
  int channels;
  /// Images are generated, not read (FastNN's mock dataset).
  bool synthetic = false;
};

/// Resolves dataset `hp.dataset_name`, split `split`; train_files replaces
/// the files of the training split (dataset_split_name), eval_files those
/// of eval_split_name. Throws ConfigError for
/// an unknown name or split, DataError when no file exists.
DatasetInfo get_dataset(const HParams& hp, const std::string& split);

/// The table row for `name`; throws ConfigError listing valid names.
const DatasetSpec& find_dataset(const std::string& name);

std::vector<std::string> dataset_names();

/// Parses labels.txt ("id:name" lines); empty if the file does not exist.
std::vector<std::string> read_labels_file(const std::string& path);

/// Expands a comma-separated list of paths/globs (relative ones joined to
/// `dir`), sorted; throws DataError when a pattern matches nothing.
std::vector<std::string> expand_file_list(const std::string& list,
                                          const std::string& dir);

}  // namespace fastnn::datasets
