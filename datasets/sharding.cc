#include "datasets/sharding.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fastnn/errors.h"
#include "fastnn/tfrecord.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::datasets {

ShardPlan plan_shards(const std::vector<int64_t>& records_per_file, int shard_index,
                      int num_shards) {
  if (num_shards < 1 || shard_index < 0 || shard_index >= num_shards) {
    throw ConfigError("input sharding: shard_index " + std::to_string(shard_index) +
                      " is not in [0, num_shards=" + std::to_string(num_shards) + ")");
  }
  ShardPlan plan;
  plan.shard_index = shard_index;
  plan.num_shards = num_shards;
  int64_t total = 0;
  bool equal = true;
  for (int64_t records : records_per_file) {
    total += records;
    equal = equal && records == records_per_file.front();
  }
  const size_t workers = static_cast<size_t>(num_shards);
  const bool file_level = records_per_file.size() % workers == 0 && equal;
  for (size_t i = 0; i < records_per_file.size(); ++i) {
    if (!file_level || i % workers == static_cast<size_t>(shard_index)) {
      plan.files.push_back(i);
    }
  }
  plan.record_level = !file_level && num_shards > 1;
  plan.samples = total / num_shards;
  plan.dropped = total - plan.samples * num_shards;
  if (plan.samples == 0) {
    throw DataError("input sharding: " + std::to_string(total) + " records cannot give each of " +
                    std::to_string(num_shards) + " workers one");
  }
  return plan;
}

std::string describe(const ShardPlan& plan, size_t total_files) {
  return "shard " + std::to_string(plan.shard_index) + " of " + std::to_string(plan.num_shards) +
         ": " + (plan.record_level ? "record-level" : "file-level") + ", " +
         std::to_string(plan.files.size()) + " of " + std::to_string(total_files) + " files, " +
         std::to_string(plan.samples) + " samples per epoch, " + std::to_string(plan.dropped) +
         " dropped";
}

int64_t count_tfrecords(const std::string& path) {
  io::require_regular_file(path, "a TFRecord file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  ::fstat(fd, &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  int64_t count = 0;
  uint64_t offset = 0;
  unsigned char header[12];
  while (offset + sizeof(header) <= size &&
         ::pread(fd, header, sizeof(header), static_cast<off_t>(offset)) ==
             static_cast<ssize_t>(sizeof(header))) {
    uint64_t length = 0;
    uint32_t stored_crc = 0;
    std::memcpy(&length, header, 8);          // little-endian hosts only, as
    std::memcpy(&stored_crc, header + 8, 4);  // the rest of src/io
    if (io::mask_crc(io::crc32c(header, 8)) != stored_crc) {
      if (offset == 0) {
        if (const char* kind = io::compression_of(header)) {
          ::close(fd);
          throw DataError("'" + path + "' looks " + kind +
                          "-compressed (TFRecordOptions compression_type=" + kind +
                          "), which this reader does not read: write it uncompressed, or "
                          "decompress it first");
        }
      }
      break;
    }
    const uint64_t end = offset + sizeof(header) + length + 4;
    if (length > size || end > size) break;
    ++count;
    offset = end;
  }
  ::close(fd);
  return count;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

bool is_held_out(std::string_view file_name, int64_t index, double fraction, uint64_t seed) {
  if (fraction <= 0) return false;
  const uint64_t h = splitmix64(fnv1a64(file_name) ^ splitmix64(seed) ^
                                splitmix64(static_cast<uint64_t>(index) + 0x632be59bd9b4e019ULL));
  // The top 53 bits as a double in [0, 1).
  return static_cast<double>(h >> 11) * 0x1.0p-53 < fraction;
}

int64_t count_in_split(const Holdout& h, std::string_view file_name, int64_t records) {
  if (!h.active()) return records;
  int64_t n = 0;
  for (int64_t i = 0; i < records; ++i) n += in_split(h, file_name, i);
  return n;
}

}  // namespace fastnn::datasets
