// The dataset name table. A dataset resolves (DatasetOptions, split) to the
// files to read and what is known about them.
//
// On disk (TF-slim's layout; each row's header shows its own names):
//   dataset_dir/<prefix>_<split>[_NNNNN-of-NNNNN].tfrecord
//   dataset_dir/labels.txt          "<id>:<name>" a line
// Two rows have no fixed layout: "tfrecord" reads train_files/eval_files
// (globs relative to dataset_dir) and needs num_classes; "image_folder"
// reads dataset_dir/<class>/<image> directly (datasets/image_folder.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "datasets/sharding.h"

namespace fastnn::datasets {

/// The dataset keys of the hyperparameters (docs/hyperparameters.md),
/// converted once by train::dataset_options with where each was set.
struct DatasetOptions {
  /// dataset_name: a row of the name table.
  std::string name = "mock";
  /// dataset_dir: the split files, labels.txt (or the class sub-folders).
  std::string dir;
  /// train_files / eval_files: comma-separated files or globs relative to
  /// `dir` that replace the training / evaluation split's files.
  std::string train_files;
  std::string eval_files;
  /// dataset_split_name / eval_split_name.
  std::string train_split = "train";
  std::string eval_split = "test";
  /// num_classes (required by dataset "tfrecord") and labels_offset.
  std::optional<int64_t> num_classes;
  int64_t labels_offset = 0;
  /// validation_fraction / validation_split_seed: a validation split held
  /// out of the training split's records.
  std::optional<double> validation_fraction;
  int64_t validation_split_seed = 0;
  /// Where a key was set ("file:line", "command line") for the errors that
  /// name it; a key absent here was left at its default.
  std::map<std::string, std::string> sources;
  std::string where(const std::string& key) const {
    const auto it = sources.find(key);
    return it == sources.end() ? "default" : it->second;
  }
};

struct DatasetInfo {
  std::string name;
  std::string split;
  /// TFRecord files of the split, sorted; for image_folder, the images.
  std::vector<std::string> files;
  /// image_folder: the class of each of `files` (each file is one encoded
  /// image, not a TFRecord file). Empty for TFRecord datasets.
  std::vector<int64_t> file_labels;
  /// Records in each of `files` when counted (the tfrecord row counts them
  /// to know num_samples); empty when not counted.
  std::vector<int64_t> records_per_file;
  /// Samples in the split as the dataset defines it (0 = unknown).
  int64_t num_samples = 0;
  int64_t num_classes = 0;
  /// Channels images are decoded to (1 for MNIST-style, 3 for RGB).
  int channels = 3;
  /// Class names from labels.txt (empty when absent).
  std::vector<std::string> labels;
  /// Synthetic data (dataset "mock"): no files, images made in memory.
  bool synthetic = false;
  /// The records of `files` that make this split, when a validation split
  /// is held out of the training files (validation_fraction); then
  /// records_per_file and num_samples count this split's records.
  Holdout holdout;
};

enum class DatasetSource {
  /// TFRecord files at fixed names in dataset_dir.
  kTFRecord,
  /// Images are generated, not read (FastNN's mock dataset).
  kSynthetic,
  /// Any TFRecord files named by train_files / eval_files.
  kCustomTFRecord,
  /// Encoded images in class sub-folders, read directly.
  kImageFolder,
};

/// Static facts of one dataset (one row of the name table).
struct DatasetSpec {
  std::string name;
  std::string file_prefix;
  /// Split names and sizes; empty: any split name, size counted.
  std::vector<std::pair<std::string, int64_t>> splits;
  /// 0: taken from the num_classes key (which is then required).
  int64_t num_classes;
  int channels;
  DatasetSource source = DatasetSource::kTFRecord;
  /// Glob of a split's files in dataset_dir, "%s" standing for the split;
  /// empty: <prefix>_<split>.tfrecord or <prefix>_<split>_NNNNN-of-NNNNN.tfrecord.
  std::string file_pattern;
};

/// Resolves dataset `options.name`, split `split`; train_files replaces
/// the files of the training split (dataset_split_name), eval_files those
/// of eval_split_name. With validation_fraction > 0 a TFRecord dataset's
/// "validation" is the held-out share of the training split's records and
/// the training split the rest; a dataset with its own validation files
/// but no test split (flowers, imagenet) serves those as "test". Throws ConfigError for an unknown
/// name or split, DataError naming the pattern when no file (or only empty files) exists.
DatasetInfo get_dataset(const DatasetOptions& options, const std::string& split);

/// Whether the dataset has split `split` under these options (a held-out
/// "validation", the "test" a held-out validation frees, eval_files).
bool has_split(const DatasetOptions& options, const std::string& split);

/// The table row for `name`; throws ConfigError listing valid names.
const DatasetSpec& find_dataset(const std::string& name);

std::vector<std::string> dataset_names();

/// The 1001 class names of TF-slim's ImageNet checkpoints: "background",
/// then the ILSVRC-2012 synsets in sorted order (third_party/imagenet_labels).
std::vector<std::string> imagenet_class_names();

/// Parses labels.txt ("id:name" lines); empty if the file does not exist.
/// Other non-blank lines are skipped, and counted in *skipped when given.
std::vector<std::string> read_labels_file(const std::string& path, int64_t* skipped = nullptr);

/// Expands a comma-separated list of paths/globs (relative ones joined to
/// `dir`), sorted; throws DataError when a pattern matches nothing.
std::vector<std::string> expand_file_list(const std::string& list, const std::string& dir);

}  // namespace fastnn::datasets
