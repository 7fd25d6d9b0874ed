#include "datasets/convert_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <system_error>
#include <thread>

#include "datasets/manifest.h"
#include "fastnn/errors.h"
#include "fastnn/tfrecord.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// Examples encoded in parallel between two writes: bounds memory (one block
// of encoded records) while keeping the output order fixed.
constexpr int64_t kBlock = 512;

std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// A progress bar with rate and ETA on a terminal; a plain line every 5 s
// otherwise (logs, CI).
class Progress {
 public:
  Progress(bool enabled, int64_t total)
      : enabled_(enabled), tty_(isatty(STDERR_FILENO) == 1), total_(total) {}

  void update(int64_t done, bool last = false) {
    if (!enabled_) return;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - shown_).count();
    if (!last && since < (tty_ ? 0.2 : 5.0)) return;
    shown_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? done / elapsed : 0.0;
    const double eta = rate > 0 ? (total_ - done) / rate : 0.0;
    const double frac = total_ > 0 ? double(done) / total_ : 1.0;
    if (tty_) {
      const int width = 30, filled = static_cast<int>(frac * width);
      std::fprintf(stderr, "\r[%s%s] %lld/%lld %5.1f%% %.0f/s ETA %s ",
                   std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                   static_cast<long long>(done), static_cast<long long>(total_), 100 * frac, rate,
                   clock_text(eta).c_str());
      if (last) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr,
                   "convert_dataset: %lld/%lld examples (%.1f%%), %.0f/s, "
                   "ETA %s\n",
                   static_cast<long long>(done), static_cast<long long>(total_), 100 * frac, rate,
                   clock_text(eta).c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool enabled_, tty_;
  int64_t total_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point shown_ = Clock::now();
};

// Encodes examples [begin, end) with `threads` threads, results in order.
std::vector<std::string> encode_block(const SplitSource& src, int64_t begin, int64_t end,
                                      int threads) {
  std::vector<std::string> out(end - begin);
  std::atomic<int64_t> next{begin};
  std::vector<std::exception_ptr> errors(threads);
  auto work = [&](int t) {
    try {
      for (int64_t i; (i = next.fetch_add(1)) < end;) {
        out[i - begin] = src.encode(i);
      }
    } catch (...) {
      errors[t] = std::current_exception();
      next = end;
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  } catch (const std::system_error&) {
    // A process limit (ulimit -u): the threads started, and this one, do
    // the work.
  }
  work(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

// Files of an earlier conversion of this split, any shard count.
std::vector<std::string> existing_outputs(const std::string& dir, const std::string& prefix,
                                          const std::string& split) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  const std::string base = prefix + "_" + split;
  const std::regex sharded(
      std::regex_replace(base, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
      R"(_\d{5}-of-\d{5}\.tfrecord)");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == base + ".tfrecord" || std::regex_match(name, sharded)) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void check_folder_flag(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ConfigError(flag + ": empty (expected a folder)");
  const std::string head = flag + " " + config::quote_value(path) + ": ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw ConfigError(head + "is a file, not a folder");
    return;
  }
  switch (const int err = errno) {
    case ENOENT:
      return;
    case ENOTDIR:
      throw ConfigError(head + "a part of the path is a file, not a folder");
    case ENAMETOOLONG:
      throw ConfigError(head + "too long for the file system");
    default:
      throw ConfigError(head + std::strerror(err));
  }
}

void check_prefix_flag(const std::string& prefix) {
  const std::string head = "--output_prefix " + config::quote_value(prefix) + ": ";
  if (prefix.find('/') != std::string::npos) {
    throw ConfigError(head +
                      "a file name prefix, not a path: no '/' (the files go "
                      "into --dataset_dir)");
  }
  for (unsigned char c : prefix) {
    if (c < 0x20 || c == 0x7f) throw ConfigError(head + "holds a control character");
  }
  if (prefix == "." || prefix == "..") throw ConfigError(head + "not a file name prefix");
  if (prefix.size() > 200) throw ConfigError(head + "longer than 200 bytes");
}

std::string shard_file_name(const std::string& prefix, const std::string& split, int shard,
                            int num_shards) {
  if (num_shards == 1) return prefix + "_" + split + ".tfrecord";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "_%05d-of-%05d.tfrecord", shard, num_shards);
  return prefix + "_" + split + buf;
}

std::vector<ConvertedSplit> write_dataset(const ConvertOptions& options,
                                          const std::vector<SplitSource>& splits) {
  if (options.num_shards < 1 || options.num_shards > 99999) {
    throw ConfigError("num_shards: " + std::to_string(options.num_shards) +
                      " is not in [1, 99999]");
  }
  check_folder_flag("--dataset_dir", options.output_dir);
  check_prefix_flag(options.prefix);
  const std::string labels_path = (fs::path(options.output_dir) / "labels.txt").string();
  std::vector<std::string> stale;
  for (const auto& source : splits) {
    for (const auto& path : existing_outputs(options.output_dir, options.prefix, source.split)) {
      stale.push_back(path);
    }
  }
  if (fs::exists(labels_path)) stale.insert(stale.begin(), labels_path);
  const std::string manifest = manifest_path(options.output_dir, options.prefix);
  if (!stale.empty() && !options.overwrite) {
    std::optional<Manifest> previous;
    try {
      previous = read_manifest(manifest);
    } catch (const DataError&) {
    }
    throw ConfigError(
        config::quote_value(fs::path(stale.front()).filename().string()) + " exists in " +
        config::quote_value(options.output_dir) +
        "; pass --overwrite to replace it (no file was written)" +
        (previous && !previous->complete ? "; an earlier conversion into it was interrupted" : ""));
  }
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec) {
    throw ConfigError("--dataset_dir " + config::quote_value(options.output_dir) +
                      ": cannot create it: " + ec.message());
  }

  int64_t total = 0;
  for (const auto& source : splits) total += source.count;
  Progress progress(options.progress, total);
  int64_t done = 0;
  const int threads = std::max(1, options.num_threads);
  std::vector<std::unique_ptr<io::TFRecordWriter>> writers;
  std::vector<ConvertedSplit> result;
  for (const auto& source : splits) {
    ConvertedSplit cs;
    cs.split = source.split;
    cs.examples = source.count;
    for (int k = 0; k < options.num_shards; ++k) {
      cs.paths.push_back((fs::path(options.output_dir) /
                          shard_file_name(options.prefix, source.split, k, options.num_shards))
                             .string());
      writers.push_back(std::make_unique<io::TFRecordWriter>(cs.paths.back()));
      io::TFRecordWriter& writer = *writers.back();
      const int64_t end = source.count * (k + 1) / options.num_shards;
      for (int64_t block_begin = source.count * k / options.num_shards; block_begin < end;
           block_begin += kBlock) {
        const int64_t block_end = std::min(end, block_begin + kBlock);
        for (const auto& rec : encode_block(source, block_begin, block_end, threads))
          writer.write(rec);
        done += block_end - block_begin;
        progress.update(done);
      }
    }
    result.push_back(cs);
  }
  progress.update(done, true);
  // Everything is encoded: only now do the outputs appear. From the first
  // rename to the last removal the folder may mix two conversions: the
  // manifest says so to readers until the complete one replaces it.
  Manifest listing;
  for (const auto& cs : result) {
    for (size_t k = 0; k < cs.paths.size(); ++k) {
      const int64_t shards = static_cast<int64_t>(cs.paths.size());
      listing.files.push_back({cs.split, fs::path(cs.paths[k]).filename().string(),
                               cs.examples * static_cast<int64_t>(k + 1) / shards -
                                   cs.examples * static_cast<int64_t>(k) / shards,
                               0});
    }
  }
  write_manifest(manifest, listing);
  for (auto& writer : writers) writer->close();
  std::string labels_txt;
  for (size_t i = 0; i < options.class_names.size(); ++i) {
    labels_txt += std::to_string(i) + ":" + options.class_names[i] + "\n";
  }
  io::write_file_atomic(labels_path, labels_txt);
  std::set<std::string> written;
  for (const auto& cs : result) written.insert(cs.paths.begin(), cs.paths.end());
  for (const auto& path : stale) {
    if (path != labels_path && !written.count(path)) fs::remove(path);
  }
  for (auto& file : listing.files)
    file.bytes = fs::file_size(fs::path(options.output_dir) / file.name);
  listing.complete = true;
  write_manifest(manifest, listing);
  return result;
}

}  // namespace fastnn::datasets
