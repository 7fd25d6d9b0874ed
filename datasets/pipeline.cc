#include "fastnn/pipeline.h"

#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <system_error>
#include <thread>

#include "datasets/image_folder.h"
#include "datasets/sharding.h"
#include "fastnn/byte_source.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "fastnn/tfrecord.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"
#include "src/io/memory_limit.h"
#include "src/io/thread_limit.h"
#include "src/log/log.h"

namespace fastnn::datasets {
namespace {

// Why a record was dropped (skip policy).
enum class Skip : uint8_t { kNone, kCrc, kTruncated, kOversized, kExample, kImage, kLabel, kPad };

// A record kept by datasets_use_caching, shared by its copies of every epoch.
struct CacheEntry {
  /// The record as read (see Record::data); with a decoded cache, freed
  /// once `image` is made.
  std::string data;
  /// Made once, by the first copy decoded (decoded cache only).
  std::once_flag once;
  io::Image image;
  int64_t label = 0;  // before labels_offset
};

struct Record {
  /// A serialized tf.train.Example, or (label >= 0) encoded image bytes.
  /// Empty when entry holds them.
  std::string data;
  std::shared_ptr<CacheEntry> entry;
  uint32_t file = 0;
  int64_t index = 0;
  uint64_t offset = 0;
  /// >= 0: the record came from an image file of this class.
  int64_t label = -1;
  /// Set when the record is unusable before decoding (an image file over
  /// max_record_bytes, not read; one that cannot be read): decode_record
  /// rejects it as refused_kind.
  std::string refused;
  Skip refused_kind = Skip::kOversized;
  /// kPad: a slot kept for a record the reader lost to corruption, so the
  /// worker's epoch keeps its planned size; decodes to nothing.
  Skip skip = Skip::kNone;
};

// A record that cannot be used, and why.
struct BadRecord : DataError {
  BadRecord(Skip k, const std::string& what) : DataError(what), kind(k) {}
  Skip kind;
};

struct RawBatch {
  int64_t index = 0;
  std::vector<Record> records;
};

struct Decoded {
  Batch batch;
  bool empty = false;
};

uint64_t mix_seed(uint64_t seed, int64_t batch, int64_t slot) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(batch);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull + static_cast<uint64_t>(slot);
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

struct Pipeline::State {
  PipelineOptions opt;
  mutable std::mutex mu;
  std::condition_variable cv;  // one condition for every state change
  std::deque<RawBatch> raw;
  std::map<int64_t, Decoded> done;
  int64_t next_index = 0;
  int64_t total_batches = -1;  // known once the reader finished
  bool stop = false;
  std::exception_ptr error;
  PipelineStats stats;
  ShardPlan plan;  // this worker's files and records per epoch
  std::thread reader;
  std::vector<std::thread> workers;
  int live_threads = 0;
  /// The first record rejected for its content, and why (for the message
  /// when too many are).
  std::string first_rejection;

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = e;
    stop = true;
    cv.notify_all();
  }

  std::string where(const Record& r) const {
    if (r.label >= 0) return opt.files[r.file];
    return opt.files[r.file] + ": record " + std::to_string(r.index) + " at offset " +
           std::to_string(r.offset);
  }

  // Counts n skipped records of one kind.
  void count(Skip kind, int64_t n = 1) {
    int64_t* counter = nullptr;
    switch (kind) {
      case Skip::kCrc:
        counter = &stats.skipped_crc_mismatch;
        break;
      case Skip::kTruncated:
        counter = &stats.skipped_truncated;
        break;
      case Skip::kOversized:
        counter = &stats.skipped_oversized;
        break;
      case Skip::kExample:
        counter = &stats.skipped_bad_example;
        break;
      case Skip::kImage:
        counter = &stats.skipped_bad_image;
        break;
      case Skip::kLabel:
        counter = &stats.skipped_bad_label;
        break;
      case Skip::kNone:
      case Skip::kPad:
        return;
    }
    if (n == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    *counter += n;
    stats.records_skipped += n;
  }

  std::string rejected_share_error(bool at_end) const;
  /// The reader thread: every epoch's records, batched, then the end.
  void read_loop();
  /// The reader's records on their way into batches.
  struct Batching;
  /// Each stage returns false when the pipeline is stopping.
  bool push_batch(Batching& b);
  bool emit(Batching& b, Record&& record);
  bool feed(Batching& b, Record&& record);
  bool read_epoch(Batching& b, int64_t epoch);
  bool finish_batches(Batching& b);
  /// Stops and joins the threads started.
  void stop_threads();
  /// The files this worker reads: every one, or its shard's.
  void plan_files();
  /// Starts the reader and the decoding threads, each holding `self`.
  void start_threads(const std::shared_ptr<State>& self);
  std::thread start_thread(const std::shared_ptr<State>& self, void (State::*loop)());
  template <typename Take>
  bool read_files(Take&& take);
  template <typename Take>
  bool read_image_file_record(size_t file_index, Take& take);
  template <typename Take>
  bool read_tfrecord_file(size_t file_index, Take& take);
  int64_t count_reader_skips(const io::RecordStats& rs, io::RecordStats& counted);
  void work_loop();
  /// What a batch's records took from the decoded-image cache, counted into
  /// stats once per batch (no lock per image).
  struct CacheTally {
    int64_t from_cache = 0;
    int64_t bytes_added = 0;
  };
  int64_t decode_record(const Record& r, std::mt19937_64& rng, float* out, CacheTally& tally);
  /// The label of a record's bytes, and in `encoded` its image (a view of
  /// data, or of `ex` where it parses one), checked (BadRecord).
  int64_t encoded_image(std::string_view data, int64_t file_label, io::ImageRecord& ex,
                        std::string_view& encoded) const;
  Decoded decode(RawBatch& rb);
};

// Rejected records of every kind against max_skipped_share, as a
// share of the records finished with (used or rejected); none used at all
// is an error whatever the share. During the input only once
// kShareCheckRecords are finished, so that a cluster of bad records at the
// start of a large set does not decide. REQUIRES: mu held.
std::string Pipeline::State::rejected_share_error(bool at_end) const {
  const int64_t rejected = stats.records_skipped;
  const int64_t finished = stats.images_decoded + rejected;
  if (rejected == 0 || (!at_end && finished < kShareCheckRecords)) return "";
  const std::string why = " (" + describe_skipped(stats) + ")" +
                          (first_rejection.empty() ? "" : "; the first: " + first_rejection);
  if (stats.images_decoded == 0) {
    return "none of the " + std::to_string(finished) +
           " records read could be used: nothing to train or evaluate on" + why;
  }
  if (rejected <= opt.max_skipped_share * static_cast<double>(finished)) return "";
  char share[96];
  std::snprintf(share, sizeof share, " (%.1f %%), more than max_skipped_share = %g allows",
                100.0 * rejected / finished, opt.max_skipped_share);
  return std::to_string(rejected) + " of the " + std::to_string(finished) +
         " records read were rejected" + share + why;
}

// Reads the plan's files in order and offers each record to take(make):
// take decides whether this worker keeps the record and only then calls
// make(record) to fill it, so image files of other workers are never read.
// Returns false when take does (the pipeline is stopping).
template <typename Take>
bool Pipeline::State::read_files(Take&& take) {
  for (size_t file_index : plan.files) {
    const bool more = opt.file_labels.empty() ? read_tfrecord_file(file_index, take)
                                              : read_image_file_record(file_index, take);
    if (!more) return false;
  }
  return true;
}

// One image file (an image_folder dataset): one record, its label the
// file's class.
template <typename Take>
bool Pipeline::State::read_image_file_record(size_t file_index, Take& take) {
  if (!take([&](Record& record) {
        record.file = static_cast<uint32_t>(file_index);
        record.label = opt.file_labels[file_index];
        std::error_code ec;
        const uintmax_t size = std::filesystem::file_size(opt.files[file_index], ec);
        if (!ec && size > static_cast<uintmax_t>(opt.max_record_bytes)) {
          record.refused = opt.files[file_index] + ": file of " + std::to_string(size) +
                           " bytes is over the limit of " + std::to_string(opt.max_record_bytes) +
                           " (max_record_bytes)";
        } else {
          try {
            record.data = read_image_file(opt.files[file_index]);
          } catch (const DataError& e) {  // a dangling link, permissions
            record.refused = e.what();
            record.refused_kind = Skip::kImage;
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        ++stats.records_read;
      })) {
    return false;
  }
  return true;
}

// The records the reader skipped since `counted`, counted by kind; returns
// how many (each had an index in the file).
int64_t Pipeline::State::count_reader_skips(const io::RecordStats& rs, io::RecordStats& counted) {
  if (rs.skipped <= counted.skipped) return 0;
  const auto skips = static_cast<int64_t>(rs.skipped - counted.skipped);
  const auto truncated = static_cast<int64_t>(rs.skipped_truncated - counted.skipped_truncated);
  const auto oversized = static_cast<int64_t>(rs.skipped_oversized - counted.skipped_oversized);
  count(Skip::kTruncated, truncated);
  count(Skip::kOversized, oversized);
  count(Skip::kCrc, skips - truncated - oversized);
  {
    std::lock_guard<std::mutex> lock(mu);
    stats.bytes_skipped += static_cast<int64_t>(rs.skipped_bytes - counted.skipped_bytes);
  }
  counted = rs;
  return skips;
}

// One TFRecord file's records of this split; the reader's skipped records
// counted by kind.
template <typename Take>
bool Pipeline::State::read_tfrecord_file(size_t file_index, Take& take) {
  const Holdout holdout{opt.holdout_fraction, opt.holdout_seed, opt.holdout_keep};
  const std::string file_name = std::filesystem::path(opt.files[file_index]).filename().string();
  io::TFRecordReaderOptions ro;
  ro.skip_corrupt = opt.skip_corrupt;
  ro.max_skipped_share = opt.max_skipped_share;
  ro.max_record_bytes = static_cast<uint64_t>(opt.max_record_bytes);
  io::TFRecordReader reader(io::open_file(opt.files[file_index]), ro);
  std::string data;
  int64_t index = 0;
  io::RecordStats counted;  // the reader's skips already in stats
  while (true) {
    const bool more = reader.next(&data);
    index += count_reader_skips(reader.stats(), counted);
    if (!more) break;
    if (!in_split(holdout, file_name, index)) {  // the other split's record
      ++index;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.records_read;
    }
    if (!take([&](Record& record) {
          record.file = static_cast<uint32_t>(file_index);
          record.index = index;
          record.offset = reader.record_offset();
          record.data.swap(data);
        })) {
      return false;
    }
    ++index;
  }
  return true;
}

// The shuffle buffer (TF's shuffle(buffer_size) over the stream of
// records), the records the decoded-image cache replays after the first
// epoch, and the batch being filled.
struct Pipeline::State::Batching {
  std::mt19937_64 rng;
  bool shuffle = false;
  std::vector<Record> buffer, cache;
  RawBatch cur;
  int64_t batch_index = 0;
};

// Hands the batch being filled to the decoders, once they have room; the
// first skip_batches (a resumed run's) are dropped unread.
bool Pipeline::State::push_batch(Batching& b) {
  b.cur.index = b.batch_index++;
  if (b.cur.index < opt.skip_batches) {
    b.cur.records.clear();
    return true;
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock,
          [&] { return stop || static_cast<int64_t>(raw.size()) < opt.num_parallel_batches; });
  if (stop) return false;
  raw.push_back(std::move(b.cur));
  b.cur = RawBatch{};
  cv.notify_all();
  return true;
}

bool Pipeline::State::emit(Batching& b, Record&& record) {
  b.cur.records.push_back(std::move(record));
  if (static_cast<int64_t>(b.cur.records.size()) == opt.batch_size) return push_batch(b);
  return true;
}

// A record into the shuffle buffer; once it is full, a random one out.
bool Pipeline::State::feed(Batching& b, Record&& record) {
  if (!b.shuffle) return emit(b, std::move(record));
  if (static_cast<int64_t>(b.buffer.size()) < opt.shuffle_buffer_size) {
    b.buffer.push_back(std::move(record));
    return true;
  }
  const size_t slot = b.rng() % b.buffer.size();
  std::swap(b.buffer[slot], record);
  return emit(b, std::move(record));
}

// One epoch of this worker's records: record-level sharding keeps every
// num_shards-th one; at most plan.samples are kept, and records lost to
// corruption are padded so every worker has the same count.
bool Pipeline::State::read_epoch(Batching& b, int64_t epoch) {
  if (opt.synthetic_samples > 0) {
    for (int64_t i = 0; i < opt.synthetic_samples; ++i) {
      Record record;
      record.index = i;
      if (!feed(b, std::move(record))) return false;
    }
    return true;
  }
  const int64_t limit = plan.samples > 0 ? plan.samples : std::numeric_limits<int64_t>::max();
  int64_t ordinal = 0, kept = 0;
  auto take = [&](auto&& make) -> bool {
    const bool mine = !plan.record_level || ordinal % plan.num_shards == plan.shard_index;
    ++ordinal;
    if (!mine || kept >= limit) return true;
    ++kept;
    Record record;
    make(record);
    if (opt.cache && epoch == 0 && record.refused.empty()) {
      record.entry = std::make_shared<CacheEntry>();
      record.entry->data.swap(record.data);
    }
    if (opt.cache && epoch == 0) b.cache.push_back(record);
    return feed(b, std::move(record));
  };
  if (opt.cache && epoch > 0) {
    for (const auto& cached : b.cache) {
      if (!feed(b, Record(cached))) return false;
    }
    kept = static_cast<int64_t>(b.cache.size());
  } else if (!read_files(take)) {
    return false;
  }
  for (; plan.samples > 0 && kept < limit; ++kept) {
    Record pad;
    pad.skip = Skip::kPad;
    if (!feed(b, std::move(pad))) return false;
  }
  return true;
}

// The shuffle buffer emptied in random order, and an evaluation's last,
// partial batch.
bool Pipeline::State::finish_batches(Batching& b) {
  while (!b.buffer.empty()) {
    const size_t slot = b.rng() % b.buffer.size();
    std::swap(b.buffer[slot], b.buffer.back());
    Record record = std::move(b.buffer.back());
    b.buffer.pop_back();
    if (!emit(b, std::move(record))) return false;
  }
  if (!opt.is_training && !b.cur.records.empty()) return push_batch(b);
  return true;
}

void Pipeline::State::read_loop() {
  Batching b;
  b.rng.seed(mix_seed(opt.seed, -1, -1));
  b.shuffle = opt.is_training && opt.shuffle_buffer_size > 1;
  const int64_t epochs = opt.is_training ? opt.num_epochs : 1;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stop) return;
      stats.epochs_started = epoch + 1;
    }
    if (!read_epoch(b, epoch)) return;
  }
  if (!finish_batches(b)) return;
  std::lock_guard<std::mutex> lock(mu);
  total_batches = b.batch_index;
  cv.notify_all();
}

int64_t Pipeline::State::encoded_image(std::string_view data, int64_t file_label,
                                       io::ImageRecord& ex, std::string_view& encoded) const {
  int64_t label = file_label;
  encoded = data;
  if (file_label < 0) {
    try {
      ex = io::decode_image_example(data);
    } catch (const DataError& e) {
      throw BadRecord(Skip::kExample, e.what());
    }
    encoded = ex.encoded;
    label = ex.label;
  }
  if (label - opt.labels_offset < 0 || label - opt.labels_offset >= opt.num_classes) {
    throw BadRecord(Skip::kLabel, "label " + std::to_string(label) + " minus labels_offset " +
                                      std::to_string(opt.labels_offset) + " is outside [0, " +
                                      std::to_string(opt.num_classes) + ")");
  }
  // The declared size is checked from the header alone, before any
  // decoding, so a forged one allocates nothing.
  try {
    const io::ImageInfo info = io::read_image_info(encoded);
    const auto pixels = static_cast<int64_t>(info.width) * info.height;
    if (pixels > opt.max_image_pixels) {
      throw DataError("image of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                      " = " + std::to_string(pixels) + " pixels is over the limit of " +
                      std::to_string(opt.max_image_pixels) + " (max_image_pixels)");
    }
  } catch (const DataError& e) {
    throw BadRecord(Skip::kImage, e.what());
  }
  return label;
}

int64_t Pipeline::State::decode_record(const Record& record, std::mt19937_64& rng, float* out,
                                       CacheTally& tally) {
  if (!record.refused.empty()) throw BadRecord(record.refused_kind, record.refused);
  // Preprocessing's DataErrors are undecodable images or channel
  // mismatches.
  if (record.entry && opt.preprocess_decoded) {
    CacheEntry& entry = *record.entry;
    bool decoded_now = false;
    std::call_once(entry.once, [&] {  // a throw leaves it to the next copy
      io::ImageRecord ex;
      std::string_view encoded;
      const int64_t label = encoded_image(entry.data, record.label, ex, encoded);
      try {
        entry.image = io::decode_image(encoded, opt.channels);
      } catch (const DataError& e) {
        throw BadRecord(Skip::kImage, e.what());
      }
      entry.label = label;
      std::string().swap(entry.data);
      decoded_now = true;
    });
    try {
      opt.preprocess_decoded(entry.image, rng, out);
    } catch (const DataError& e) {
      throw BadRecord(Skip::kImage, e.what());
    }
    if (decoded_now) {
      tally.bytes_added += static_cast<int64_t>(entry.image.pixels.size());
    } else {
      ++tally.from_cache;
    }
    return entry.label - opt.labels_offset;
  }
  io::ImageRecord ex;
  std::string_view encoded;
  const int64_t label =
      encoded_image(record.entry ? record.entry->data : record.data, record.label, ex, encoded);
  try {
    opt.preprocess({encoded, opt.channels}, rng, out);
  } catch (const DataError& e) {
    throw BadRecord(Skip::kImage, e.what());
  }
  return label - opt.labels_offset;
}

Decoded Pipeline::State::decode(RawBatch& rb) {
  const auto& shape = opt.shape;
  const int64_t batch_size = static_cast<int64_t>(rb.records.size());
  // Pageable memory: a GPU feed copies each batch through a few page-locked
  // staging buffers of its own (src/cuda/cuda_device.h), so the batches
  // held ahead here pin nothing.
  auto images = torch::empty({batch_size, shape.channels, shape.height, shape.width});
  auto labels = torch::empty({batch_size}, torch::TensorOptions().dtype(torch::kInt64));
  float* out = images.data_ptr<float>();
  int64_t* lab = labels.data_ptr<int64_t>();
  int64_t kept = 0;
  CacheTally tally;
  for (int64_t i = 0; i < batch_size; ++i) {
    const Record& record = rb.records[i];
    if (opt.synthetic_samples > 0) {
      std::mt19937_64 rng(mix_seed(opt.seed, rb.index, i));
      std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
      float* dst = out + kept * shape.numel();
      for (int64_t k = 0; k < shape.numel(); ++k) dst[k] = pixel(rng);
      lab[kept++] = static_cast<int64_t>(rng() % static_cast<uint64_t>(opt.num_classes));
      continue;
    }
    if (record.skip == Skip::kPad) continue;
    try {
      std::mt19937_64 rng(mix_seed(opt.seed, rb.index, i));
      lab[kept] = decode_record(record, rng, out + kept * shape.numel(), tally);
      ++kept;
    } catch (const BadRecord& e) {
      if (!opt.skip_corrupt) throw DataError(where(record) + ": " + e.what());
      count(e.kind);
      std::lock_guard<std::mutex> lock(mu);
      if (first_rejection.empty()) first_rejection = where(record) + ": " + e.what();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stats.images_decoded += kept;
    stats.images_from_cache += tally.from_cache;
    stats.cache_bytes += tally.bytes_added;
    const std::string error = rejected_share_error(false);
    if (!error.empty()) throw DataError(error);
  }
  Decoded decoded;
  decoded.batch.index = rb.index;
  decoded.empty = kept == 0;
  decoded.batch.images = kept == batch_size ? images : images.narrow(0, 0, kept);
  decoded.batch.labels = kept == batch_size ? labels : labels.narrow(0, 0, kept);
  return decoded;
}

void Pipeline::State::work_loop() {
  while (true) {
    RawBatch rb;
    {
      std::unique_lock<std::mutex> lock(mu);
      // Keep at most prefetch_batches decoded ahead of the consumer; the
      // batch the consumer waits for is always allowed through.
      cv.wait(lock, [&] {
        return stop || (raw.empty() && total_batches >= 0) ||
               (!raw.empty() && raw.front().index < next_index + opt.prefetch_batches);
      });
      if (stop || raw.empty()) return;
      rb = std::move(raw.front());
      raw.pop_front();
      cv.notify_all();
    }
    Decoded d;
    try {
      d = decode(rb);
    } catch (...) {
      fail(std::current_exception());
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    done.emplace(d.batch.index, std::move(d));
    cv.notify_all();
  }
}

namespace {

// Bounds the batches held ahead, by count and by memory: a huge
// prefetch_buffer_size would otherwise decode batches until the process
// runs out of memory.
void check_batches_ahead(const PipelineOptions& o) {
  const std::pair<const char*, int64_t> keys[] = {{"prefetch_buffer_size", o.prefetch_batches},
                                                  {"num_parallel_batches", o.num_parallel_batches}};
  for (const auto& [key, n] : keys) {
    if (n > kMaxBatchesAhead) {
      throw ConfigError(std::string(key) + ": " + std::to_string(n) +
                        " batches held ahead is over the limit of " +
                        std::to_string(kMaxBatchesAhead));
    }
  }
  const double batch_bytes =
      4.0 * static_cast<double>(o.batch_size) * static_cast<double>(o.shape.numel());
  const double memory = io::usable_memory_bytes();
  const double ahead = batch_bytes * static_cast<double>(o.prefetch_batches);
  if (memory > 0 && ahead > memory / 2) {
    char text[160];
    std::snprintf(text, sizeof text,
                  " batches of %.1f MiB each hold %.1f GiB ahead, more than half of "
                  "the %.1f GiB of memory this process may use",
                  batch_bytes / (1 << 20), ahead / (1 << 30), memory / (1 << 30));
    throw ConfigError("prefetch_buffer_size: " + std::to_string(o.prefetch_batches) + text);
  }
}

// The records of each file in this split: the caller's counts when it gave
// them, one per image file, else each TFRecord file counted through the
// holdout.
std::vector<int64_t> records_per_file(const PipelineOptions& o) {
  if (o.records_per_file.size() == o.files.size()) return o.records_per_file;
  if (!o.file_labels.empty()) return std::vector<int64_t>(o.files.size(), 1);
  const Holdout holdout{o.holdout_fraction, o.holdout_seed, o.holdout_keep};
  std::vector<int64_t> counts;
  counts.reserve(o.files.size());
  for (const auto& f : o.files) {
    counts.push_back(
        count_in_split(holdout, std::filesystem::path(f).filename().string(), count_tfrecords(f)));
  }
  return counts;
}

// The records this worker reads per epoch: its shard's, or every file's.
int64_t records_per_epoch(const PipelineOptions& o, const ShardPlan& plan) {
  if (plan.samples > 0) return plan.samples;
  const std::vector<int64_t> counts = records_per_file(o);
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

// What one cached record costs, averaged over the first kSampled records of
// the first file (or the first kSampled image files): the decoded pixels
// (height x width x the channels decoded to) with a decoded cache, else the
// record's bytes; plus the bookkeeping of each. 0 when none could be read.
constexpr int kSampled = 16;
constexpr int64_t kEntryOverhead = sizeof(CacheEntry) + sizeof(Record) + 64;
int64_t bytes_per_cached_record(const PipelineOptions& options) {
  std::vector<std::string> records;
  try {
    if (!options.file_labels.empty()) {
      for (size_t file_index = 0; file_index < options.files.size() && records.size() < kSampled;
           ++file_index) {
        std::error_code ec;
        if (std::filesystem::file_size(options.files[file_index], ec) >
            static_cast<uintmax_t>(options.max_record_bytes)) {
          continue;
        }
        records.push_back(read_image_file(options.files[file_index]));
      }
    } else {
      io::TFRecordReaderOptions ro;
      ro.skip_corrupt = true;
      ro.max_skipped_share = 1;
      ro.max_record_bytes = static_cast<uint64_t>(options.max_record_bytes);
      io::TFRecordReader reader(io::open_file(options.files.front()), ro);
      std::string data;
      while (records.size() < kSampled && reader.next(&data)) records.push_back(data);
    }
  } catch (const DataError&) {  // a bad file: the run itself will say so
  }
  int64_t total = 0, counted = 0;
  for (const auto& data : records) {
    if (!options.preprocess_decoded) {
      total += static_cast<int64_t>(data.size());
      ++counted;
      continue;
    }
    try {
      io::ImageRecord ex;
      if (options.file_labels.empty()) ex = io::decode_image_example(data);
      const io::ImageInfo info =
          io::read_image_info(options.file_labels.empty() ? std::string_view(ex.encoded) : data);
      total += int64_t{info.height} * info.width *
               (options.channels > 0 ? options.channels : info.channels);
      ++counted;
    } catch (const DataError&) {
    }
  }
  return counted == 0 ? 0 : total / counted + kEntryOverhead;
}

// datasets_use_caching: refuses a cache whose estimated size is over the
// budget, and says what it will cost.
void check_cache_budget(const PipelineOptions& options, const ShardPlan& plan,
                        PipelineStats& stats) {
  const int64_t records = records_per_epoch(options, plan);
  const int64_t each = bytes_per_cached_record(options);
  const double estimate = static_cast<double>(records) * static_cast<double>(each);
  double budget = static_cast<double>(options.cache_budget_bytes);
  std::string of_what = "cache_budget_bytes";
  if (budget <= 0) {
    const double memory = io::usable_memory_bytes();
    const double ahead = 4.0 * static_cast<double>(options.batch_size) *
                         static_cast<double>(options.shape.numel()) *
                         static_cast<double>(options.prefetch_batches);
    budget = memory / 2 - ahead;
    char text[160];
    std::snprintf(text, sizeof text,
                  "half of the %.1f GiB of memory this process may use, less %.1f GiB of "
                  "prefetched batches",
                  memory / (1 << 30), ahead / (1 << 30));
    of_what = text;
  }
  const std::string what = options.preprocess_decoded
                               ? "the decoded images of " + std::to_string(records) + " records"
                               : std::to_string(records) + " records as read";
  if (estimate > budget) {
    char text[200];
    std::snprintf(
        text, sizeof text, ", about %lld bytes each, would take %.2f GiB: more than the %.2f GiB (",
        static_cast<long long>(each), estimate / (1 << 30), std::max(0.0, budget) / (1 << 30));
    throw ConfigError("datasets_use_caching: " + what + text + of_what +
                      ") the cache may use; set datasets_use_caching=False");
  }
  stats.cache_estimate_bytes = static_cast<int64_t>(estimate);
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MiB", estimate / (1 << 20));
  log::info() << "Input cache (datasets_use_caching): " << what << ", about " << size
              << ", kept after their first read";
}

// The constructor's checks of its options, in order.
void check_options(const PipelineOptions& o) {
  if (o.batch_size < 1) throw ConfigError("batch_size must be >= 1");
  if (o.max_record_bytes < 1 || o.max_image_pixels < 1) {
    throw ConfigError("max_record_bytes and max_image_pixels must be >= 1");
  }
  if (!(o.max_skipped_share >= 0 && o.max_skipped_share <= 1)) {
    throw ConfigError("max_skipped_share must be in [0, 1], got " +
                      std::to_string(o.max_skipped_share));
  }
  check_batches_ahead(o);
  if (o.files.empty() && o.synthetic_samples <= 0) {
    throw DataError("input pipeline: no files to read");
  }
  if (!o.file_labels.empty() && o.file_labels.size() != o.files.size()) {
    throw ConfigError("input pipeline: file_labels and files differ in size");
  }
}

}  // namespace

void Pipeline::State::plan_files() {
  if (opt.synthetic_samples > 0 || opt.num_shards <= 1) {
    for (size_t file_index = 0; file_index < opt.files.size(); ++file_index)
      plan.files.push_back(file_index);
  } else {
    plan = plan_shards(records_per_file(opt), opt.shard_index, opt.num_shards);
    stats.shard_samples = plan.samples;
    stats.shard_dropped = plan.dropped;
    log::info() << "Input " << describe(plan, opt.files.size());
  }
}

// One thread running loop, holding the state, and saying when it ends.
std::thread Pipeline::State::start_thread(const std::shared_ptr<State>& self,
                                          void (State::*loop)()) {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++live_threads;
  }
  try {
    return std::thread([state = self, loop] {
      try {
        ((*state).*loop)();
      } catch (...) {
        state->fail(std::current_exception());
      }
      std::lock_guard<std::mutex> lock(state->mu);
      --state->live_threads;
      state->cv.notify_all();
    });
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu);
    --live_threads;
    throw;
  }
}

// Under a process limit (ulimit -u) fewer decoding threads do the work;
// without a reader and one decoder the threads started are stopped before
// the error unwinds (a joinable std::thread would abort).
void Pipeline::State::start_threads(const std::shared_ptr<State>& self) {
  const int wanted = std::max(1, opt.num_threads);
  try {
    reader = start_thread(self, &State::read_loop);
    for (int i = 0; i < wanted; ++i) workers.push_back(start_thread(self, &State::work_loop));
  } catch (const std::system_error& e) {
    if (!io::is_thread_limit(e) || workers.empty()) {
      stop_threads();
      if (!io::is_thread_limit(e)) throw;
      throw ConfigError(io::thread_limit_message(
          "input pipeline", "lower num_preprocessing_threads or raise the limit"));
    }
    log::warning() << "input pipeline: " << workers.size() << " of " << wanted
                   << " decoding threads started (the process limit is reached)";
  } catch (...) {
    stop_threads();
    throw;
  }
}

Pipeline::Pipeline(PipelineOptions options) : state_(std::make_shared<State>()) {
  State& shared = *state_;
  shared.opt = std::move(options);
  check_options(shared.opt);
  shared.plan_files();
  shared.opt.num_parallel_batches = std::max<int64_t>(1, shared.opt.num_parallel_batches);
  shared.opt.prefetch_batches = std::max<int64_t>(1, shared.opt.prefetch_batches);
  shared.next_index = shared.opt.skip_batches;
  if (shared.opt.synthetic_samples > 0) shared.opt.cache = false;  // nothing to read
  if (shared.opt.cache) check_cache_budget(shared.opt, shared.plan, shared.stats);
  shared.start_threads(state_);
}

void Pipeline::State::stop_threads() {
  std::unique_lock<std::mutex> lock(mu);
  stop = true;
  cv.notify_all();
  // A thread stuck in a read (a hung network file system) must not keep a
  // stopping process from exiting: after 2 s it is left behind,
  // holding the state, instead of joined.
  const bool ended = cv.wait_for(lock, std::chrono::seconds(2), [&] { return live_threads == 0; });
  lock.unlock();
  if (!ended) {
    log::warning() << "input pipeline: " << live_threads
                   << " thread(s) still blocked in a read after 2 s; not waiting for them";
  }
  auto finish = [ended](std::thread& t) {
    if (!t.joinable()) return;
    if (ended) {
      t.join();
    } else {
      t.detach();
    }
  };
  finish(reader);
  for (auto& w : workers) finish(w);
}

Pipeline::~Pipeline() { state_->stop_threads(); }

std::optional<Batch> Pipeline::next() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  auto ready = [&] {
    return s.error || s.done.count(s.next_index) ||
           (s.total_batches >= 0 && s.next_index >= s.total_batches);
  };
  while (true) {
    while (!ready()) {
      if (s.opt.stop_requested && s.opt.stop_requested()) return std::nullopt;
      s.cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (s.error) std::rethrow_exception(s.error);
    auto it = s.done.find(s.next_index);
    if (it == s.done.end()) {
      lock.unlock();
      check_rejected_share();
      return std::nullopt;
    }
    Decoded d = std::move(it->second);
    s.done.erase(it);
    ++s.next_index;
    s.cv.notify_all();
    if (!d.empty) return std::move(d.batch);
  }
}

std::string describe_skipped(const PipelineStats& st) {
  if (st.records_skipped == 0) return "";
  std::string out = std::to_string(st.records_skipped) + " corrupt records skipped:";
  const std::pair<const char*, int64_t> kinds[] = {
      {"crc_mismatch", st.skipped_crc_mismatch}, {"truncated", st.skipped_truncated},
      {"oversized", st.skipped_oversized},       {"bad_example", st.skipped_bad_example},
      {"bad_image", st.skipped_bad_image},       {"bad_label", st.skipped_bad_label}};
  const char* sep = " ";
  for (const auto& [name, n] : kinds) {
    if (n == 0) continue;
    out += sep + std::to_string(n) + " " + name;
    sep = ", ";
  }
  if (st.bytes_skipped > 0) {
    out += "; " + std::to_string(st.bytes_skipped) + " corrupt bytes skipped";
  }
  return out;
}

void Pipeline::check_rejected_share() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  const std::string error = state_->rejected_share_error(true);
  if (!error.empty()) throw DataError(error);
}

PipelineStats Pipeline::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace fastnn::datasets
