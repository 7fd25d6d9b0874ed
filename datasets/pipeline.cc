#include "fastnn/pipeline.h"

#include <torch/torch.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "fastnn/byte_source.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "fastnn/image.h"
#include "fastnn/tfrecord.h"

namespace fastnn::datasets {
namespace {

struct Record {
  std::string data;
  uint32_t file = 0;
  int64_t index = 0;
  uint64_t offset = 0;
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
  std::thread reader;
  std::vector<std::thread> workers;

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = e;
    stop = true;
    cv.notify_all();
  }

  std::string where(const Record& r) const {
    return opt.files[r.file] + ": record " + std::to_string(r.index) +
           " at offset " + std::to_string(r.offset);
  }

  void read_loop();
  void work_loop();
  Decoded decode(RawBatch& rb);
};

void Pipeline::State::read_loop() {
  std::mt19937_64 rng(mix_seed(opt.seed, -1, -1));
  const bool shuffle = opt.is_training && opt.shuffle_buffer_size > 1;
  std::vector<Record> buffer, cache;
  RawBatch cur;
  int64_t batch_index = 0;

  auto push_batch = [&]() -> bool {
    cur.index = batch_index++;
    if (cur.index < opt.skip_batches) {
      cur.records.clear();
      return true;
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] {
      return stop || static_cast<int64_t>(raw.size()) < opt.num_parallel_batches;
    });
    if (stop) return false;
    raw.push_back(std::move(cur));
    cur = RawBatch{};
    cv.notify_all();
    return true;
  };
  auto emit = [&](Record&& r) -> bool {
    cur.records.push_back(std::move(r));
    if (static_cast<int64_t>(cur.records.size()) == opt.batch_size) {
      return push_batch();
    }
    return true;
  };
  auto feed = [&](Record&& r) -> bool {
    if (!shuffle) return emit(std::move(r));
    if (static_cast<int64_t>(buffer.size()) < opt.shuffle_buffer_size) {
      buffer.push_back(std::move(r));
      return true;
    }
    size_t j = rng() % buffer.size();
    std::swap(buffer[j], r);
    return emit(std::move(r));
  };

  const int64_t epochs = opt.is_training ? opt.num_epochs : 1;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stop) return;
      stats.epochs_started = epoch + 1;
    }
    if (opt.synthetic_samples > 0) {
      for (int64_t i = 0; i < opt.synthetic_samples; ++i) {
        Record r;
        r.index = i;
        if (!feed(std::move(r))) return;
      }
      continue;
    }
    if (opt.cache && epoch > 0) {
      for (const auto& r : cache) {
        if (!feed(Record(r))) return;
      }
      continue;
    }
    for (uint32_t f = 0; f < opt.files.size(); ++f) {
      io::TFRecordReader reader(io::open_file(opt.files[f]), opt.skip_corrupt);
      Record r;
      int64_t index = 0;
      while (reader.next(&r.data)) {
        r.file = f;
        r.index = index++;
        r.offset = reader.record_offset();
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.records_read;
        }
        if (opt.cache && epoch == 0) cache.push_back(r);
        if (!feed(std::move(r))) return;
        r = Record{};
      }
      std::lock_guard<std::mutex> lock(mu);
      stats.records_skipped += static_cast<int64_t>(reader.stats().skipped);
    }
  }
  while (!buffer.empty()) {
    size_t j = rng() % buffer.size();
    std::swap(buffer[j], buffer.back());
    Record r = std::move(buffer.back());
    buffer.pop_back();
    if (!emit(std::move(r))) return;
  }
  if (!opt.is_training && !cur.records.empty()) {
    if (!push_batch()) return;
  }
  std::lock_guard<std::mutex> lock(mu);
  total_batches = batch_index;
  cv.notify_all();
}

Decoded Pipeline::State::decode(RawBatch& rb) {
  const auto& shape = opt.shape;
  const int64_t n = static_cast<int64_t>(rb.records.size());
  auto images = torch::empty({n, shape.channels, shape.height, shape.width});
  auto labels = torch::empty({n}, torch::kInt64);
  float* out = images.data_ptr<float>();
  int64_t* lab = labels.data_ptr<int64_t>();
  int64_t kept = 0, skipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rb.records[i];
    if (opt.synthetic_samples > 0) {
      std::mt19937_64 rng(mix_seed(opt.seed, rb.index, i));
      std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
      float* dst = out + kept * shape.numel();
      for (int64_t k = 0; k < shape.numel(); ++k) dst[k] = pixel(rng);
      lab[kept++] = static_cast<int64_t>(rng() % static_cast<uint64_t>(opt.num_classes));
      continue;
    }
    try {
      io::ImageRecord ex = io::decode_image_example(r.data);
      const int64_t label = ex.label - opt.labels_offset;
      if (label < 0 || label >= opt.num_classes) {
        throw DataError("label " + std::to_string(ex.label) +
                        " minus labels_offset " +
                        std::to_string(opt.labels_offset) +
                        " is outside [0, " + std::to_string(opt.num_classes) +
                        ")");
      }
      std::mt19937_64 rng(mix_seed(opt.seed, rb.index, i));
      opt.preprocess({ex.encoded, opt.channels}, rng,
                     out + kept * shape.numel());
      lab[kept++] = label;
    } catch (const DataError& e) {
      if (!opt.skip_corrupt) throw DataError(where(r) + ": " + e.what());
      ++skipped;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stats.images_decoded += kept;
    stats.records_skipped += skipped;
  }
  Decoded d;
  d.batch.index = rb.index;
  d.empty = kept == 0;
  d.batch.images = kept == n ? images : images.narrow(0, 0, kept);
  d.batch.labels = kept == n ? labels : labels.narrow(0, 0, kept);
  return d;
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
               (!raw.empty() &&
                raw.front().index < next_index + opt.prefetch_batches);
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

Pipeline::Pipeline(PipelineOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.opt = std::move(options);
  if (s.opt.batch_size < 1) throw ConfigError("batch_size must be >= 1");
  if (s.opt.files.empty() && s.opt.synthetic_samples <= 0) {
    throw DataError("input pipeline: no files to read");
  }
  s.opt.num_parallel_batches = std::max<int64_t>(1, s.opt.num_parallel_batches);
  s.opt.prefetch_batches = std::max<int64_t>(1, s.opt.prefetch_batches);
  s.next_index = s.opt.skip_batches;
  s.reader = std::thread([&s] {
    try {
      s.read_loop();
    } catch (...) {
      s.fail(std::current_exception());
    }
  });
  for (int i = 0; i < std::max(1, s.opt.num_threads); ++i) {
    s.workers.emplace_back([&s] { s.work_loop(); });
  }
}

Pipeline::~Pipeline() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
    state_->cv.notify_all();
  }
  state_->reader.join();
  for (auto& w : state_->workers) w.join();
}

std::optional<Batch> Pipeline::next() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  while (true) {
    s.cv.wait(lock, [&] {
      return s.error || s.done.count(s.next_index) ||
             (s.total_batches >= 0 && s.next_index >= s.total_batches);
    });
    if (s.error) std::rethrow_exception(s.error);
    auto it = s.done.find(s.next_index);
    if (it == s.done.end()) return std::nullopt;
    Decoded d = std::move(it->second);
    s.done.erase(it);
    ++s.next_index;
    s.cv.notify_all();
    if (!d.empty) return std::move(d.batch);
  }
}

PipelineStats Pipeline::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace fastnn::datasets
