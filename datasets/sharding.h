// Splitting a dataset's records among data-parallel workers so that every
// worker sees the same number of samples (and so of steps) per epoch: an
// uneven split hangs the epoch-end all-reduce.
//
// FastNN's rule (sorted files, file i to worker i mod W) is used when it is
// balanced: the file count divides by W and every file holds the same number
// of records. Otherwise records are dealt out one by one (record i of the
// concatenated files to worker i mod W). Either way each worker keeps
// floor(total / W) records; the remainder is dropped and counted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::datasets {

/// What one worker reads in every epoch.
struct ShardPlan {
  /// Indices of the files this worker opens, ascending.
  std::vector<size_t> files;
  /// True: of the records in `files` (numbered across files from 0), keep
  /// those with number % num_shards == shard_index. False: keep them all.
  bool record_level = false;
  /// Records this worker yields per epoch (it stops after this many).
  int64_t samples = 0;
  /// Records of the whole file set nobody reads, per epoch.
  int64_t dropped = 0;
  int shard_index = 0;
  int num_shards = 1;
};

/// Plans worker `shard_index` of `num_shards` given the record count of
/// each file. Throws ConfigError for a bad index/count and DataError when
/// there are fewer records than workers.
ShardPlan plan_shards(const std::vector<int64_t>& records_per_file, int shard_index,
                      int num_shards);

/// One line for the log: "shard 1 of 4: file-level, 2 of 8 files, 500
/// samples per epoch, 0 dropped".
std::string describe(const ShardPlan& plan, size_t total_files);

/// Counts the records of a TFRecord file from their 12-byte headers alone
/// (pread + seek, the data is not read): about a microsecond per record
/// when the file is in the page cache. Stops at the first header that is
/// truncated or fails its CRC, counting the complete records before it.
/// Throws DataError when the file cannot be opened.
int64_t count_tfrecords(const std::string& path);

/// A validation split held out of TFRecord training files, record by
/// record: record `index` (0-based, in file order) of the file named
/// `file_name` (its base name, so the split does not depend on where the
/// data lies) is held out when a 64-bit hash of (file_name, index, seed),
/// read as a number in [0, 1), is below `fraction`. Deterministic and
/// independent of sharding, workers and threads; the held-out share of N
/// records is fraction * N up to sampling noise (about +-sqrt(N f (1-f))).
struct Holdout {
  /// 0: nothing is held out (every record belongs to the split).
  double fraction = 0;
  uint64_t seed = 0;
  /// True: the split is the held-out records ("validation"); false: the
  /// split is the others ("train").
  bool keep = false;
  bool active() const { return fraction > 0; }
};

bool is_held_out(std::string_view file_name, int64_t index, double fraction, uint64_t seed);

/// True when record `index` of `file_name` belongs to the split `h` selects.
inline bool in_split(const Holdout& h, std::string_view file_name, int64_t index) {
  return !h.active() || is_held_out(file_name, index, h.fraction, h.seed) == h.keep;
}

/// How many of the first `records` records of `file_name` belong to `h`'s
/// split.
int64_t count_in_split(const Holdout& h, std::string_view file_name, int64_t records);

}  // namespace fastnn::datasets
