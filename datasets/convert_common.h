// What every convert_dataset converter shares: TF-slim output names,
// shards of equal size, parallel deterministic encoding, atomic writes, the
// refusal to overwrite, labels.txt and progress reporting.
//
// Output layout, for prefix P and split S:
//   num_shards == 1: <out>/P_S.tfrecord        (TF-slim's mnist, cifar10)
//   num_shards == N: <out>/P_S_00000-of-0000N.tfrecord ... (flowers)
//   <out>/labels.txt: one "<label>:<class name>" line per class.
// Shard k holds examples [n*k/N, n*(k+1)/N), so sizes differ by at most 1.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fastnn::datasets {

struct ConvertOptions {
  std::string input_dir;
  std::string output_dir;
  /// File name prefix, TF-slim's dataset name (mnist, cifar10, flowers).
  std::string prefix;
  /// Class names written to labels.txt (converters that read names from the
  /// input fill this in themselves).
  std::vector<std::string> class_names;
  /// Replace existing outputs. Default: false, an existing output is a
  /// ConfigError naming it and nothing is written.
  bool overwrite = false;
  /// Encoding threads. REQUIRES: >= 1.
  int num_threads = 2;
  /// Output files per split. REQUIRES: >= 1.
  int num_shards = 1;
  /// Convert only the first N examples of each split (0 = all).
  int64_t max_examples = 0;
  /// Progress on stderr: a bar with ETA when stderr is a terminal, plain
  /// lines every few seconds otherwise. Default: off (library use, tests).
  bool progress = false;
  /// image_folder: share of the images that form split "validation".
  /// REQUIRES: in [0, 1).
  double validation_fraction = 0.1;
  /// image_folder: seed of the train/validation split.
  uint64_t validation_split_seed = 0;
};

/// Per-split result of a conversion.
struct ConvertedSplit {
  std::string split;
  /// The shard files, in shard order.
  std::vector<std::string> paths;
  int64_t examples = 0;
};

/// One split to write: example i's serialized tf.train.Example is
/// encode(i), for i in [0, count). encode is called from several threads at
/// once; it throws DataError for bad input.
struct SplitSource {
  std::string split;
  int64_t count = 0;
  std::function<std::string(int64_t)> encode;
};

/// Checks a folder given on the command line before any work: throws
/// ConfigError, one line naming `flag` and at most the first 100 bytes of
/// `path`, when it is empty, too long for the file system, an existing file
/// or under one, or unusable (permissions). A missing folder passes (an
/// output folder is created; a converter names a missing input).
void check_folder_flag(const std::string& flag, const std::string& path);

/// Checks --output_prefix before any work: throws ConfigError naming the
/// flag when it is not a file name prefix (a '/', which would write outside
/// --dataset_dir, a control character, "." or "..") or is over 200 bytes.
void check_prefix_flag(const std::string& prefix);

/// TF-slim's file name of shard `shard` of `num_shards` (no directory).
std::string shard_file_name(const std::string& prefix, const std::string& split, int shard,
                            int num_shards);

/// Writes every split and labels.txt. Before any work, throws ConfigError
/// naming an output that already exists (any shard count of the same split,
/// or labels.txt) unless options.overwrite; with overwrite, shard files of
/// an earlier conversion with another shard count are removed afterwards.
/// Files are written under temporary names and renamed when all splits are
/// encoded, so a failed run leaves no partial output. Throws ConfigError
/// (see check_folder_flag) when options.output_dir cannot be the output.
std::vector<ConvertedSplit> write_dataset(const ConvertOptions& options,
                                          const std::vector<SplitSource>& splits);

}  // namespace fastnn::datasets
