#include "src/train/checkpoint_format.h"

#include <cstring>
#include <set>

#include "fastnn/errors.h"
#include "src/io/crc32c.h"

namespace fastnn::train {
namespace {

constexpr char kMagic[] = "FNNCKPT1";
constexpr size_t kMagicBytes = 8;
constexpr size_t kCrcBytes = 4;
// The name is shown, cut to this many bytes, in errors.
constexpr size_t kShownName = 100;

template <typename T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Reads fields from the body (between the magic and the CRC); never past it.
class Cursor {
 public:
  Cursor(std::string_view body, const std::string& path) : body_(body), path_(path) {}
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const char* take(uint64_t n) {
    if (n > body_.size() - pos_) {
      throw DataError("checkpoint '" + path_ + "' is truncated");
    }
    const char* p = body_.data() + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  uint64_t left() const { return body_.size() - pos_; }

 private:
  std::string_view body_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

size_t element_bytes(uint8_t code) {
  switch (static_cast<DTypeCode>(code)) {
    case DTypeCode::kFloat64:
    case DTypeCode::kInt64:
      return 8;
    case DTypeCode::kFloat32:
    case DTypeCode::kInt32:
      return 4;
    case DTypeCode::kBFloat16:
    case DTypeCode::kFloat16:
      return 2;
    case DTypeCode::kUInt8:
      return 1;
  }
  return 0;
}

namespace {

// One tensor's name, dtype, shape and bytes, checked against each other.
CheckpointEntry parse_entry(Cursor& cur, const std::string& path) {
  CheckpointEntry entry;
  const uint32_t len = cur.get<uint32_t>();
  entry.name.assign(cur.take(len), len);
  const std::string what =
      "checkpoint '" + path + "': tensor '" + entry.name.substr(0, kShownName) + "': ";
  const uint8_t code = cur.get<uint8_t>();
  const size_t elem = element_bytes(code);
  if (elem == 0) throw DataError(what + "unknown dtype code " + std::to_string(code));
  entry.dtype = static_cast<DTypeCode>(code);
  const uint8_t ndim = cur.get<uint8_t>();
  entry.dims.resize(ndim);
  uint64_t numel = 1;
  bool overflow = false;
  for (auto& dim : entry.dims) {
    dim = cur.get<int64_t>();
    if (dim < 0) throw DataError(what + "negative dimension " + std::to_string(dim));
    const auto extent = static_cast<uint64_t>(dim);
    if (extent != 0 && numel > UINT64_MAX / extent) overflow = true;
    numel = overflow ? 0 : numel * extent;
  }
  const uint64_t nbytes = cur.get<uint64_t>();
  if (overflow || numel > UINT64_MAX / elem || numel * elem != nbytes) {
    throw DataError(what + "its shape does not match its " + std::to_string(nbytes) + " bytes");
  }
  entry.data = std::string_view(cur.take(nbytes), static_cast<size_t>(nbytes));
  return entry;
}

}  // namespace

std::vector<CheckpointEntry> parse_checkpoint(std::string_view bytes, const std::string& path) {
  if (bytes.size() < kMagicBytes + 4 + kCrcBytes ||
      bytes.compare(0, kMagicBytes, std::string_view(kMagic, kMagicBytes)) != 0) {
    throw DataError("'" + path +
                    "' is neither a FastNN-C++ checkpoint (no FNNCKPT1 header) nor a TensorFlow "
                    "one (no table footer)");
  }
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - kCrcBytes, kCrcBytes);
  if (stored != io::crc32c(bytes.data(), bytes.size() - kCrcBytes)) {
    throw DataError("checkpoint '" + path + "' is corrupt (CRC mismatch)");
  }
  Cursor cur(bytes.substr(kMagicBytes, bytes.size() - kMagicBytes - kCrcBytes), path);
  const uint32_t count = cur.get<uint32_t>();
  // Each entry takes at least 4 + 1 + 1 + 8 bytes: a larger count is a lie,
  // refused before reserving anything for it.
  if (count > cur.left() / 14) {
    throw DataError("checkpoint '" + path + "' declares " + std::to_string(count) +
                    " tensors, more than its " + std::to_string(bytes.size()) + " bytes can hold");
  }
  std::vector<CheckpointEntry> out;
  out.reserve(count);
  std::set<std::string> names;
  for (uint32_t i = 0; i < count; ++i) {
    CheckpointEntry entry = parse_entry(cur, path);
    const std::string what =
        "checkpoint '" + path + "': tensor '" + entry.name.substr(0, kShownName) + "': ";
    out.push_back(std::move(entry));
    if (!names.insert(out.back().name).second) {
      throw DataError(what + "appears twice");
    }
  }
  if (cur.left() != 0) {
    throw DataError("checkpoint '" + path + "' has " + std::to_string(cur.left()) +
                    " bytes after its last tensor");
  }
  return out;
}

std::string checkpoint_header(uint32_t count) {
  std::string out(kMagic, kMagicBytes);
  put<uint32_t>(&out, count);
  return out;
}

void append_checkpoint_entry(std::string* out, const std::string& name, DTypeCode dtype,
                             const std::vector<int64_t>& dims, std::string_view data) {
  put<uint32_t>(out, static_cast<uint32_t>(name.size()));
  out->append(name);
  put<uint8_t>(out, static_cast<uint8_t>(dtype));
  put<uint8_t>(out, static_cast<uint8_t>(dims.size()));
  for (int64_t d : dims) put<int64_t>(out, d);
  put<uint64_t>(out, data.size());
  out->append(data);
}

void append_checkpoint_crc(std::string* out) {
  put<uint32_t>(out, io::crc32c(out->data(), out->size()));
}

}  // namespace fastnn::train
