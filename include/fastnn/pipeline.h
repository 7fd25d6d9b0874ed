// The multi-threaded input pipeline: TFRecord files -> (cache) -> shuffle
// buffer -> parallel decode + preprocess -> batches -> prefetch.
//
// Deterministic: with the same options (seed included) the batches are
// identical run to run, whatever the thread count, because the record order
// comes from one reader thread and every image's random transforms are
// seeded by (seed, batch index, position in batch).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fastnn/preprocess.h"

namespace fastnn::datasets {

struct PipelineOptions {
  /// TFRecord files, read in this order (or image files, see file_labels).
  std::vector<std::string> files;
  /// Non-empty: the record source is a list of image files instead of
  /// TFRecord shards; files[i] holds one encoded PNG/JPEG image of class
  /// file_labels[i] (dataset image_folder). REQUIRES: same size as files.
  std::vector<int64_t> file_labels;
  /// Records in each of files when already known (e.g. counted by the
  /// dataset); empty: counted from the record headers when sharding needs
  /// them.
  std::vector<int64_t> records_per_file;
  /// This worker's part of the data: worker shard_index of num_shards gets
  /// the same number of records per epoch as every other (datasets/sharding.h);
  /// up to num_shards - 1 records are dropped, in evaluation too, so exact
  /// evaluation counts need num_shards = 1. Counting the records of each file
  /// (for the plan) happens in the constructor, before the first batch.
  /// REQUIRES: 0 <= shard_index < num_shards.
  int shard_index = 0;
  int num_shards = 1;
  /// > 0: a validation split is held out of the TFRecord files record by
  /// record (datasets/sharding.h, Holdout): with holdout_keep the pipeline
  /// reads only the held-out share holdout_fraction, otherwise only the
  /// rest. records_per_file then counts the records of this split.
  double holdout_fraction = 0;
  uint64_t holdout_seed = 0;
  bool holdout_keep = false;
  /// Training: shuffle, repeat num_epochs, full batches only. Otherwise one
  /// pass in file order with a partial last batch.
  bool is_training = true;
  int64_t batch_size = 32;
  int64_t num_epochs = 1;
  /// REQUIRES: >= 1. 1 disables shuffling.
  int64_t shuffle_buffer_size = 1024;
  /// Decoded batches held ready ahead of the consumer. REQUIRES: at most
  /// kMaxBatchesAhead, and their float32 images at most half the memory.
  int64_t prefetch_batches = 32;
  /// Decode + preprocess threads.
  int num_threads = 4;
  /// Batches being decoded at once. REQUIRES: at most kMaxBatchesAhead.
  int64_t num_parallel_batches = 8;
  /// Keep every record in memory after it is first read (datasets_use_caching):
  /// with preprocess_decoded, as its image decoded whole (uint8, before the
  /// random part of the preprocessing), else as read. Later epochs read no
  /// file and, with preprocess_decoded, decode no image (a record whose
  /// later copy the shuffle brings out first is decoded once, by that
  /// copy). The constructor estimates the cache's size from the first
  /// images' headers and throws ConfigError, naming it, when it is over
  /// cache_budget_bytes.
  bool cache = false;
  /// The decoded form of preprocess, used on cached images. Empty: the
  /// cache keeps the records as read.
  preprocessing::DecodedPreprocessFn preprocess_decoded;
  /// The most the cache may take, in bytes. 0: half of this machine's
  /// memory less the batches held ahead (prefetch_batches).
  int64_t cache_budget_bytes = 0;
  /// Skip (and count) corrupt records and bad images instead of failing.
  bool skip_corrupt = false;
  /// With skip_corrupt: a TFRecord file of which more than this share of the
  /// bytes was skipped as corrupt throws DataError at its end; and so does
  /// the pipeline when more than this share of the records it finished with
  /// (used or rejected; a rejected record of any kind counts) was rejected:
  /// checked at the end of the input (or by check_rejected_share) and, once
  /// kShareCheckRecords records are finished, after every batch. 1 never throws. Whatever the
  /// share, a pipeline that rejects every record it reads throws at the same points. REQUIRES: in
  /// [0, 1].
  double max_skipped_share = 0.1;
  /// Longer TFRecord records and image files are corrupt (skipped and
  /// counted with skip_corrupt, else DataError). REQUIRES: >= 1.
  int64_t max_record_bytes = int64_t{64} << 20;
  /// Images whose header declares more pixels are bad images, refused
  /// before any decoding. REQUIRES: >= 1.
  int64_t max_image_pixels = 100000000;
  uint64_t seed = 0;
  /// Batches to drop at the start without decoding (resume position).
  int64_t skip_batches = 0;
  /// Images are decoded to this many channels.
  int channels = 1;
  int64_t num_classes = 10;
  /// Subtracted from every label (TF-slim's labels_offset).
  int64_t labels_offset = 0;
  preprocessing::OutputShape shape;
  preprocessing::PreprocessFn preprocess;
  /// Polled about every 100 ms while next() waits for a batch; when it
  /// returns true next() returns nullopt at once, before the end of the
  /// input (the caller tells the two apart by what it asked, e.g. a stop
  /// signal). Empty: next() waits.
  std::function<bool()> stop_requested;
  /// > 0: no files; each epoch is this many synthetic images (uniform in
  /// [-1, 1], labels uniform in [0, num_classes)), seeded like the rest.
  int64_t synthetic_samples = 0;
};

/// One batch: images [B, C, H, W] float32, labels [B] int64.
struct Batch {
  at::Tensor images;
  at::Tensor labels;
  /// Batch index since the start of the pipeline (skipped ones included).
  int64_t index = 0;
};

/// Counters of the pipeline, readable at any time.
struct PipelineStats {
  int64_t records_read = 0;
  int64_t images_decoded = 0;
  /// Records dropped under skip_corrupt, all kinds; the sum of the next six.
  int64_t records_skipped = 0;
  /// Data (or length) CRC did not match.
  int64_t skipped_crc_mismatch = 0;
  /// The file ended inside a record.
  int64_t skipped_truncated = 0;
  /// The record (a TFRecord's declared length, an image_folder file) is
  /// over max_record_bytes; it was not read.
  int64_t skipped_oversized = 0;
  /// The record is not a tf.train.Example with image/encoded and a label.
  int64_t skipped_bad_example = 0;
  /// The image bytes could not be decoded.
  int64_t skipped_bad_image = 0;
  /// label - labels_offset is outside [0, num_classes).
  int64_t skipped_bad_label = 0;
  /// Bytes of the TFRecord files the reader passed over as corrupt (framing
  /// included): the crc_mismatch and truncated skips, not records dropped
  /// later for their content.
  int64_t bytes_skipped = 0;
  int64_t epochs_started = 0;
  /// Images preprocessed from the decoded cache, without decoding.
  int64_t images_from_cache = 0;
  /// Bytes of decoded pixels the cache holds.
  int64_t cache_bytes = 0;
  /// The constructor's estimate of the cache's size (0: no cache).
  int64_t cache_estimate_bytes = 0;
  /// Records this worker yields per epoch (0 = not counted: one worker).
  int64_t shard_samples = 0;
  /// Records of the file set no worker reads, per epoch, so that every
  /// worker gets shard_samples.
  int64_t shard_dropped = 0;
};

/// "3 corrupt records skipped: 1 crc_mismatch, 2 bad_image; 4096 corrupt
/// bytes skipped" (the bytes part only when bytes_skipped > 0) or "".
std::string describe_skipped(const PipelineStats& stats);

/// Records finished (used or rejected) before max_skipped_share is
/// checked during the input, not only at its end.
constexpr int64_t kShareCheckRecords = 10000;
/// The most batches held ahead (prefetch_batches, num_parallel_batches).
constexpr int64_t kMaxBatchesAhead = 10000;

class Pipeline {
 public:
  explicit Pipeline(PipelineOptions options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// The next batch, or nullopt when the data is exhausted (or
  /// stop_requested). Rethrows the first error of a worker thread
  /// (DataError for bad data, or for too many records rejected).
  std::optional<Batch> next();

  PipelineStats stats() const;

  /// The check next() makes at the end of the input, for a consumer that
  /// stops before it (a training run at stop_at_step): throws DataError when
  /// the records rejected so far pass max_skipped_share of those finished
  /// with, or none of them was used.
  void check_rejected_share() const;

 private:
  struct State;
  /// Shared with the threads, so that one stuck in a read (a hung network
  /// file system) can be left behind when the pipeline is destroyed.
  std::shared_ptr<State> state_;
};

}  // namespace fastnn::datasets
