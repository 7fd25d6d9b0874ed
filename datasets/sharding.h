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
ShardPlan plan_shards(const std::vector<int64_t>& records_per_file,
                      int shard_index,
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

}  // namespace fastnn::datasets
