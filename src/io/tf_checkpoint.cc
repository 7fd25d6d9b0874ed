#include "src/io/tf_checkpoint.h"

#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <snappy.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>

#include "fastnn/errors.h"
#include "fastnn/tf_checkpoint.pb.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::io {
namespace fs = std::filesystem;

namespace {

// TensorFlow's kTensorBundleVersion: the newest bundle layout it writes.
constexpr int kBundleVersion = 1;
// TensorFlow's own limit on a tensor's rank.
constexpr int kMaxRank = 254;
// No published checkpoint is split into more data files than this.
constexpr int kMaxShards = 1 << 16;
// A LevelDB table's footer ends with this number (little-endian).
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterBytes = 48;

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

uint64_t load_le(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// A LevelDB file over bytes in memory.
class MemoryFile : public leveldb::RandomAccessFile {
 public:
  explicit MemoryFile(std::string bytes) : bytes_(std::move(bytes)) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* /*scratch*/) const override {
    if (offset > bytes_.size()) return leveldb::Status::IOError("read past the end");
    n = std::min<size_t>(n, bytes_.size() - offset);
    *result = leveldb::Slice(bytes_.data() + offset, n);
    return leveldb::Status::OK();
  }
  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

// One opened table: the file must outlive the table that reads it.
struct Table {
  std::string shown;
  std::unique_ptr<leveldb::RandomAccessFile> file;
  std::unique_ptr<leveldb::Table> table;

  std::unique_ptr<leveldb::Iterator> iterator() const {
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    return std::unique_ptr<leveldb::Iterator>(table->NewIterator(ro));
  }
};

// Reads n bytes at offset; false when the file holds fewer.
bool read_exact(const leveldb::RandomAccessFile& file, uint64_t offset, size_t n,
                std::string* out) {
  out->resize(n);
  leveldb::Slice got;
  if (!file.Read(offset, n, &got, out->data()).ok() || got.size() != n) return false;
  if (got.data() != out->data()) std::memcpy(out->data(), got.data(), n);
  return true;
}

bool get_varint64(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// LevelDB allocates a block's declared size (and a snappy block's declared
// uncompressed size) before it reads the block, so a forged handle would
// make it allocate gigabytes. Before LevelDB opens a table, every block
// handle (the footer's, and the index block's for each data block) is
// checked to lie inside the file, and every snappy block to decompress to
// what it declares (snappy's own validator, which allocates nothing). The
// checksums and the entries are left to LevelDB.
std::string forged_block_handles(const leveldb::RandomAccessFile& file, uint64_t size) {
  constexpr uint64_t kTrailer = 5;  // type byte + CRC32C
  if (size < kFooterBytes) return "shorter than a table's footer";
  std::string footer;
  if (!read_exact(file, size - kFooterBytes, kFooterBytes, &footer)) return "unreadable footer";
  if (load_le(footer.data() + 40, 8) != kTableMagic) return "no table footer";
  std::string_view footer_rest(footer);
  uint64_t handles[4];
  for (uint64_t& handle : handles) {
    if (!get_varint64(&footer_rest, &handle)) return "a malformed footer";
  }
  const uint64_t limit = size - kFooterBytes;
  // Checks one block: inside the file, of a known type, and (snappy) valid.
  auto check_block = [&](uint64_t offset, uint64_t block_size,
                         std::string* contents) -> std::string {
    if (offset > limit || block_size > limit - offset || kTrailer > limit - offset - block_size) {
      return "a block handle past the end of the file";
    }
    std::string type;
    if (!read_exact(file, offset + block_size, 1, &type)) return "an unreadable block";
    if (type[0] != 0 && type[0] != 1) return "a block of unknown compression";
    if (type[0] == 0 && !contents) return "";
    std::string raw;
    if (!read_exact(file, offset, static_cast<size_t>(block_size), &raw))
      return "an unreadable block";
    if (type[0] == 1) {
      if (!snappy::IsValidCompressedBuffer(raw.data(), raw.size())) {
        return "a snappy block that does not decompress";
      }
      if (contents && !snappy::Uncompress(raw.data(), raw.size(), contents)) {
        return "a snappy block that does not decompress";
      }
    } else {
      *contents = std::move(raw);
    }
    return "";
  };
  std::string index;
  for (const std::string& why : {check_block(handles[0], handles[1], nullptr),
                                 check_block(handles[2], handles[3], &index)}) {
    if (!why.empty()) return why;
  }
  // The index block: entries (shared, unshared and value lengths, the key's
  // unshared bytes, a BlockHandle), then the restart offsets and their count.
  if (index.size() < 4) return "a malformed index block";
  const uint64_t restarts = load_le(index.data() + index.size() - 4, 4);
  if (restarts > (index.size() - 4) / 4) return "a malformed index block";
  std::string_view entries(index.data(), index.size() - 4 - 4 * restarts);
  while (!entries.empty()) {
    uint64_t shared, unshared, value_len, offset, block_size;
    if (!get_varint64(&entries, &shared) || !get_varint64(&entries, &unshared) ||
        !get_varint64(&entries, &value_len) || unshared > entries.size() ||
        value_len > entries.size() - unshared) {
      return "a malformed index block";
    }
    std::string_view value = entries.substr(unshared, value_len);
    entries.remove_prefix(unshared + value_len);
    if (!get_varint64(&value, &offset) || !get_varint64(&value, &block_size)) {
      return "a malformed index block";
    }
    const std::string why = check_block(offset, block_size, nullptr);
    if (!why.empty()) return why;
  }
  return "";
}

Table open_table(std::unique_ptr<leveldb::RandomAccessFile> file, uint64_t size,
                 const std::string& shown) {
  Table t;
  t.shown = shown;
  t.file = std::move(file);
  const std::string forged = forged_block_handles(*t.file, size);
  if (!forged.empty()) {
    throw DataError(in_quotes(shown) + " is not a readable TensorFlow checkpoint table: " + forged);
  }
  leveldb::Options options;
  options.paranoid_checks = true;
  leveldb::Table* table = nullptr;
  const leveldb::Status s = leveldb::Table::Open(options, t.file.get(), size, &table);
  if (!s.ok()) {
    throw DataError(in_quotes(shown) +
                    " is not a readable TensorFlow checkpoint table: " + s.ToString());
  }
  t.table.reset(table);
  return t;
}

Table open_table_file(const std::string& path) {
  leveldb::Env* env = leveldb::Env::Default();
  uint64_t size = 0;
  leveldb::Status s = env->GetFileSize(path, &size);
  leveldb::RandomAccessFile* file = nullptr;
  if (s.ok()) s = env->NewRandomAccessFile(path, &file);
  if (!s.ok()) throw DataError("cannot read " + in_quotes(path) + ": " + s.ToString());
  return open_table(std::unique_ptr<leveldb::RandomAccessFile>(file), size, path);
}

Table open_table_bytes(std::string_view bytes, const std::string& shown) {
  auto file = std::make_unique<MemoryFile>(std::string(bytes));
  const uint64_t size = file->size();
  return open_table(std::move(file), size, shown);
}

// The shape of a TensorShapeProto, its element count checked for overflow.
void read_shape(const tfckpt::TensorShapeProto& proto, const std::string& where,
                std::vector<int64_t>* shape, int64_t* elements) {
  if (proto.unknown_rank()) throw DataError(where + ": the shape's rank is unknown");
  if (proto.dim_size() > kMaxRank) {
    throw DataError(where + ": rank " + std::to_string(proto.dim_size()) + " is over " +
                    std::to_string(kMaxRank));
  }
  shape->clear();
  int64_t n = 1;
  for (const auto& d : proto.dim()) {
    const int64_t size = d.size();
    if (size < 0) throw DataError(where + ": dimension " + std::to_string(size) + " < 0");
    if (size != 0 && n > std::numeric_limits<int64_t>::max() / size) {
      throw DataError(where + ": the element count overflows");
    }
    n *= size;
    shape->push_back(size);
  }
  *elements = n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// True when a slice covers the whole tensor (an extent without a length is
// the full dimension; no extents at all is the full tensor).
bool full_slice(const tfckpt::TensorSliceProto& slice, const std::vector<int64_t>& shape) {
  if (slice.extent_size() == 0) return true;
  if (static_cast<size_t>(slice.extent_size()) != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const auto& e = slice.extent(static_cast<int>(i));
    if (e.start() != 0) return false;
    if (e.has_length_case() == tfckpt::TensorSliceProto::Extent::kLength &&
        e.length() != shape[i]) {
      return false;
    }
  }
  return true;
}

// The name in a V1 slice key (and a V2 slice key): OrderedCode's
// WriteNumIncreasing(0) = "\x00", then the name with "\x00" written as
// "\x00\xff" and "\xff" as "\xff\x00", ended by "\x00\x01"; the slice's
// extents follow.
bool decode_slice_key_name(std::string_view key, std::string* name) {
  if (key.empty() || key[0] != '\0') return false;
  name->clear();
  for (size_t i = 1; i + 1 < key.size(); ++i) {
    const char c = key[i];
    const char next = key[i + 1];
    if (c == '\0') {
      if (next == '\x01') return true;
      if (next != '\xff') return false;
      name->push_back('\0');
      ++i;
    } else if (c == '\xff') {
      if (next != '\0') return false;
      name->push_back('\xff');
      ++i;
    } else {
      name->push_back(c);
    }
  }
  return false;
}

// Appends the little-endian bytes of n values of a repeated field.
template <typename Field, typename T>
void append_values(const Field& field, std::string* out) {
  for (const auto& v : field) {
    const T x = static_cast<T>(v);
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));  // x86-64 and aarch64: little-endian
    out->append(b, sizeof(T));
  }
}

// A V1 slice's values as little-endian bytes (numbers) or strings.
void v1_values(const tfckpt::TensorProto& proto, const TfTensorInfo& info, const std::string& where,
               TfTensor* out) {
  const size_t width = tf_dtype_bytes(info.dtype);
  const auto elements = static_cast<size_t>(info.num_elements);
  if (info.dtype == kTfString) {
    if (static_cast<size_t>(proto.string_val_size()) != elements) {
      throw DataError(where + ": " + std::to_string(proto.string_val_size()) + " strings for " +
                      std::to_string(elements) + " elements");
    }
    out->strings.assign(proto.string_val().begin(), proto.string_val().end());
    return;
  }
  if (!proto.tensor_content().empty()) {
    out->bytes = proto.tensor_content();
  } else {
    switch (info.dtype) {
      case kTfFloat:
        append_values<decltype(proto.float_val()), float>(proto.float_val(), &out->bytes);
        break;
      case kTfDouble:
        append_values<decltype(proto.double_val()), double>(proto.double_val(), &out->bytes);
        break;
      case kTfInt32:
        append_values<decltype(proto.int_val()), int32_t>(proto.int_val(), &out->bytes);
        break;
      case kTfInt16:
        append_values<decltype(proto.int_val()), int16_t>(proto.int_val(), &out->bytes);
        break;
      case kTfUInt16:
        append_values<decltype(proto.int_val()), uint16_t>(proto.int_val(), &out->bytes);
        break;
      case kTfInt8:
        append_values<decltype(proto.int_val()), int8_t>(proto.int_val(), &out->bytes);
        break;
      case kTfUInt8:
        append_values<decltype(proto.int_val()), uint8_t>(proto.int_val(), &out->bytes);
        break;
      case kTfInt64:
        append_values<decltype(proto.int64_val()), int64_t>(proto.int64_val(), &out->bytes);
        break;
      case kTfBool:
        append_values<decltype(proto.bool_val()), uint8_t>(proto.bool_val(), &out->bytes);
        break;
      case kTfHalf:
      case kTfBFloat16:
        append_values<decltype(proto.half_val()), uint16_t>(proto.half_val(), &out->bytes);
        break;
      default:
        break;
    }
  }
  if (out->bytes.size() != elements * width) {
    throw DataError(where + ": " + std::to_string(out->bytes.size() / std::max<size_t>(width, 1)) +
                    " values for " + std::to_string(elements) + " elements");
  }
}

// A V2 string tensor: a varint64 length per element, a masked CRC32C of
// the lengths (each hashed as a fixed little-endian uint32, uint64 when
// over 4 GiB), then the bytes. The entry's CRC covers those length words,
// the checksum's 4 bytes and the string bytes.
void v2_strings(const std::string& data, const TfTensorInfo& info, const std::string& where,
                TfTensor* out) {
  const auto elements = static_cast<uint64_t>(info.num_elements);
  if (elements > data.size())
    throw DataError(where + ": " + std::to_string(elements) + " strings in " +
                    std::to_string(data.size()) + " bytes");
  std::vector<uint64_t> lengths;
  lengths.reserve(elements);
  size_t pos = 0;
  uint32_t crc = 0;
  uint64_t total = 0;
  for (uint64_t i = 0; i < elements; ++i) {
    uint64_t length = 0;
    int shift = 0;
    while (true) {
      if (pos >= data.size() || shift > 63) throw DataError(where + ": a string length is cut off");
      const auto byte = static_cast<uint8_t>(data[pos++]);
      length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) break;
    }
    if (length > data.size())
      throw DataError(where + ": a string of " + std::to_string(length) + " bytes in " +
                      std::to_string(data.size()));
    total += length;
    if (length <= std::numeric_limits<uint32_t>::max()) {
      const auto v32 = static_cast<uint32_t>(length);
      crc = crc32c_extend(crc, &v32, sizeof v32);
    } else {
      crc = crc32c_extend(crc, &length, sizeof length);
    }
    lengths.push_back(length);
  }
  if (data.size() - pos < 4 || data.size() - pos - 4 != total) {
    throw DataError(where + ": the string lengths add up to " + std::to_string(total) +
                    " bytes, the entry holds " + std::to_string(data.size()));
  }
  if (static_cast<uint32_t>(load_le(data.data() + pos, 4)) != mask_crc(crc)) {
    throw DataError(where + ": the string lengths fail their CRC32C");
  }
  crc = crc32c_extend(crc, data.data() + pos, 4);
  pos += 4;
  crc = crc32c_extend(crc, data.data() + pos, data.size() - pos);
  if (mask_crc(crc) != info.crc32c_masked) throw DataError(where + ": CRC32C mismatch");
  for (uint64_t len : lengths) {
    out->strings.emplace_back(data, pos, len);
    pos += len;
  }
}

std::string read_range(const std::string& path, int64_t offset, int64_t size,
                       const std::string& where) {
  std::error_code ec;
  const auto file_size = fs::file_size(path, ec);
  if (ec) throw DataError(where + ": cannot read " + in_quotes(path) + ": " + ec.message());
  if (static_cast<uint64_t>(offset) > file_size ||
      static_cast<uint64_t>(size) > file_size - static_cast<uint64_t>(offset)) {
    throw DataError(where + ": bytes " + std::to_string(offset) + "+" + std::to_string(size) +
                    " are past the end of " + in_quotes(path) + " (" + std::to_string(file_size) +
                    " bytes)");
  }
  std::ifstream in(path, std::ios::binary);
  std::string data(static_cast<size_t>(size), '\0');
  in.seekg(offset);
  in.read(data.data(), size);
  if (!in) throw DataError(where + ": cannot read " + in_quotes(path));
  return data;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_regular(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// V1 shards "BASE-SSSSS-of-NNNNN" (all of them, in order), given one of
// them, a "BASE-?????-of-NNNNN" pattern, or BASE.
std::vector<std::string> v1_shards(const std::string& path) {
  static const std::regex shard(R"((.*)-(\d{5}|\?{5})-of-(\d{5}))");
  std::smatch match;
  std::string base;
  int count = 0;
  if (std::regex_match(path, match, shard)) {
    base = match[1];
    count = std::stoi(match[3]);
  } else {
    const fs::path dir = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path();
    const std::string stem = fs::path(path).filename().string() + "-";
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::smatch shard_match;
      if (name.rfind(stem, 0) == 0 && std::regex_match(name, shard_match, shard) &&
          shard_match[2] == "00000") {
        base = path;
        count = std::stoi(shard_match[3]);
        break;
      }
    }
  }
  std::vector<std::string> files;
  if (count <= 0) {
    if (is_regular(path)) files.push_back(path);
    return files;
  }
  char suffix[32];
  for (int i = 0; i < count; ++i) {
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d", i, count);
    files.push_back(base + suffix);
    if (!is_regular(files.back())) {
      throw DataError("the V1 checkpoint " + in_quotes(path) + " lacks its shard " +
                      in_quotes(files.back()));
    }
  }
  return files;
}

// The checkpoint a directory's "checkpoint" file names, relative to it.
std::string from_checkpoint_state(const std::string& dir) {
  const fs::path state = fs::path(dir) / "checkpoint";
  std::error_code ec;
  if (fs::exists(state, ec)) {
    if (const auto named = checkpoint_state_path(read_file(state.string(), 1 << 20))) {
      const fs::path p = *named;
      return (p.is_absolute() ? p : fs::path(dir) / p).string();
    }
  }
  throw DataError(in_quotes(dir) +
                  " is a directory without a 'checkpoint' file naming a checkpoint");
}

// Decodes the body of a text-format string literal (between its quotes):
// \a \b \f \n \r \t \v \\ \' \" \?, \ooo octal, \xHH hex.
std::optional<std::string> unescape_text_string(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    const char c = s[i];
    static const std::string_view kFrom = "abfnrtv\\'\"?", kTo = "\a\b\f\n\r\t\v\\'\"?";
    if (const size_t k = kFrom.find(c); k != std::string_view::npos) {
      out.push_back(kTo[k]);
    } else if (c >= '0' && c <= '7') {
      int v = 0;
      for (int n = 0; n < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++n, ++i) {
        v = v * 8 + (s[i] - '0');
      }
      --i;
      out.push_back(static_cast<char>(v & 0xFF));
    } else if (c == 'x' && i + 1 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1]))) {
      int v = 0;
      for (int n = 0;
           n < 2 && i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])); ++n) {
        const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(s[++i])));
        v = v * 16 + (h <= '9' ? h - '0' : h - 'a' + 10);
      }
      out.push_back(static_cast<char>(v));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> checkpoint_state_path(std::string_view text) {
  const std::string_view key = "model_checkpoint_path:";
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.substr(0, key.size()) != key) continue;
    const size_t a = line.find('"');
    const size_t b = line.rfind('"');
    if (a == std::string_view::npos || b <= a) return std::nullopt;
    return unescape_text_string(line.substr(a + 1, b - a - 1));
  }
  return std::nullopt;
}

std::string tf_dtype_name(int dtype) {
  switch (dtype) {
    case kTfFloat:
      return "float32";
    case kTfDouble:
      return "float64";
    case kTfInt32:
      return "int32";
    case kTfUInt8:
      return "uint8";
    case kTfInt16:
      return "int16";
    case kTfInt8:
      return "int8";
    case kTfString:
      return "string";
    case kTfInt64:
      return "int64";
    case kTfBool:
      return "bool";
    case kTfBFloat16:
      return "bfloat16";
    case kTfUInt16:
      return "uint16";
    case kTfHalf:
      return "float16";
    case kTfUInt32:
      return "uint32";
    case kTfUInt64:
      return "uint64";
    case kTfComplex64:
      return "complex64";
    case kTfComplex128:
      return "complex128";
    default:
      return "DT_" + std::to_string(dtype);
  }
}

size_t tf_dtype_bytes(int dtype) {
  switch (dtype) {
    case kTfComplex128:
      return 16;
    case kTfComplex64:
    case kTfDouble:
    case kTfInt64:
    case kTfUInt64:
      return 8;
    case kTfFloat:
    case kTfInt32:
    case kTfUInt32:
      return 4;
    case kTfInt16:
    case kTfUInt16:
    case kTfHalf:
    case kTfBFloat16:
      return 2;
    case kTfUInt8:
    case kTfInt8:
    case kTfBool:
      return 1;
    default:
      return 0;
  }
}

struct TfCheckpoint::Impl {
  TfCheckpointFormat format = TfCheckpointFormat::kV2;
  std::string path;
  std::vector<std::string> files;
  std::vector<Table> tables;
  std::vector<TfTensorInfo> tensors;
  int num_shards = 1;

  // Adds the variables of one table, telling its format by its "" entry.
  void add_table(Table table);
  void add_v2_entry(const std::string& name, const std::string& value, const std::string& shown);
  void finish();
  std::string shard_path(int shard) const {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".data-%05d-of-%05d", shard, num_shards);
    return path + suffix;
  }
};

void TfCheckpoint::Impl::add_table(Table table) {
  const std::string& shown = table.shown;
  auto it = table.iterator();
  it->SeekToFirst();
  if (!it->Valid() || !it->key().empty()) {
    if (!it->status().ok()) throw DataError(in_quotes(shown) + ": " + it->status().ToString());
    throw DataError(in_quotes(shown) + " has no header entry: not a TensorFlow checkpoint");
  }
  tfckpt::SavedTensorSlices v1;
  const bool is_v1 =
      v1.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) && v1.has_meta();
  if (!tables.empty() && is_v1 != (format == TfCheckpointFormat::kV1)) {
    throw DataError(in_quotes(shown) + " mixes V1 and V2 checkpoint files");
  }
  const int index = static_cast<int>(tables.size());
  if (is_v1) {
    format = TfCheckpointFormat::kV1;
    std::map<std::string, size_t> by_name;
    for (const auto& meta : v1.meta().tensor()) {
      TfTensorInfo info;
      info.name = meta.name();
      const std::string where = in_quotes(shown) + ", tensor " + in_quotes(info.name);
      info.dtype = meta.type();
      read_shape(meta.shape(), where, &info.shape, &info.num_elements);
      if (meta.slice_size() != 1 || !full_slice(meta.slice(0), info.shape)) {
        info.num_slices = std::max(1, meta.slice_size());
      }
      info.table = index;
      by_name[info.name] = tensors.size();
      tensors.push_back(std::move(info));
    }
    for (it->Next(); it->Valid(); it->Next()) {
      std::string name;
      const leveldb::Slice key = it->key();
      if (!decode_slice_key_name(std::string_view(key.data(), key.size()), &name)) {
        throw DataError(in_quotes(shown) + ": a key is not a tensor slice's");
      }
      auto found = by_name.find(name);
      if (found == by_name.end()) {
        throw DataError(in_quotes(shown) + ": values of " + in_quotes(name) +
                        ", which its metadata does not list");
      }
      tensors[found->second].key.assign(key.data(), key.size());
    }
  } else {
    format = TfCheckpointFormat::kV2;
    tfckpt::BundleHeaderProto header;
    if (!header.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      throw DataError(in_quotes(shown) + ": the header entry is neither a V1 nor a V2 header");
    }
    if (header.endianness() != tfckpt::BundleHeaderProto::LITTLE) {
      throw DataError(in_quotes(shown) + " was written on a big-endian machine: not supported");
    }
    if (header.version().min_consumer() > kBundleVersion ||
        std::count(header.version().bad_consumers().begin(), header.version().bad_consumers().end(),
                   kBundleVersion)) {
      throw DataError(in_quotes(shown) + " needs a newer reader (bundle version: producer " +
                      std::to_string(header.version().producer()) + ", min_consumer " +
                      std::to_string(header.version().min_consumer()) + ")");
    }
    if (header.num_shards() < 1 || header.num_shards() > kMaxShards) {
      throw DataError(in_quotes(shown) + ": num_shards " + std::to_string(header.num_shards()) +
                      " is not in [1, " + std::to_string(kMaxShards) + "]");
    }
    num_shards = header.num_shards();
    for (it->Next(); it->Valid(); it->Next()) {
      // A partitioned variable's slices have keys of their own ("\0"...);
      // its entry under its name says how many (num_slices).
      if (it->key().size() > 0 && it->key()[0] == '\0') continue;
      add_v2_entry(it->key().ToString(), it->value().ToString(), shown);
    }
  }
  if (!it->status().ok()) throw DataError(in_quotes(shown) + ": " + it->status().ToString());
  tables.push_back(std::move(table));
}

void TfCheckpoint::Impl::add_v2_entry(const std::string& name, const std::string& value,
                                      const std::string& shown) {
  const std::string where = in_quotes(shown) + ", tensor " + in_quotes(name);
  tfckpt::BundleEntryProto entry;
  if (!entry.ParseFromString(value))
    throw DataError(where + ": the entry is not a BundleEntryProto");
  TfTensorInfo info;
  info.name = name;
  info.dtype = entry.dtype();
  read_shape(entry.shape(), where, &info.shape, &info.num_elements);
  info.num_slices = entry.slices_size();
  info.shard_id = entry.shard_id();
  info.offset = entry.offset();
  info.size = entry.size();
  info.crc32c_masked = entry.crc32c();
  if (info.num_slices == 0) {
    if (info.shard_id < 0 || info.shard_id >= num_shards) {
      throw DataError(where + ": shard " + std::to_string(info.shard_id) + " of " +
                      std::to_string(num_shards));
    }
    if (info.offset < 0 || info.size < 0 ||
        info.offset > std::numeric_limits<int64_t>::max() - info.size) {
      throw DataError(where + ": invalid byte range " + std::to_string(info.offset) + "+" +
                      std::to_string(info.size));
    }
    const size_t width = tf_dtype_bytes(info.dtype);
    if (width != 0 &&
        (info.num_elements > info.size ||
         static_cast<uint64_t>(info.num_elements) * width != static_cast<uint64_t>(info.size))) {
      throw DataError(where + ": " + std::to_string(info.size) + " bytes for a " +
                      tf_dtype_name(info.dtype) + shape_text(info.shape) + " tensor");
    }
  }
  tensors.push_back(std::move(info));
}

void TfCheckpoint::Impl::finish() {
  std::sort(tensors.begin(), tensors.end(),
            [](const TfTensorInfo& a, const TfTensorInfo& b) { return a.name < b.name; });
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].name == tensors[i - 1].name) {
      throw DataError(in_quotes(path) + " lists the tensor " + in_quotes(tensors[i].name) +
                      " twice");
    }
  }
}

TfCheckpoint::TfCheckpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TfCheckpoint::TfCheckpoint(TfCheckpoint&&) noexcept = default;
TfCheckpoint& TfCheckpoint::operator=(TfCheckpoint&&) noexcept = default;
TfCheckpoint::~TfCheckpoint() = default;

TfCheckpoint TfCheckpoint::open(const std::string& given) {
  std::string path = given;
  std::error_code ec;
  if (fs::is_directory(path, ec)) path = from_checkpoint_state(path);
  auto impl = std::make_unique<Impl>();
  static const std::regex data_file(R"((.*)\.data-\d{5}-of-\d{5})");
  std::smatch match;
  std::string prefix;
  if (ends_with(path, ".index") && is_regular(path)) {
    prefix = path.substr(0, path.size() - 6);
  } else if (std::regex_match(path, match, data_file) &&
             is_regular(std::string(match[1]) + ".index")) {
    prefix = match[1];
  } else if (is_regular(path + ".index")) {
    prefix = path;
  }
  if (!prefix.empty()) {
    impl->path = prefix;
    impl->add_table(open_table_file(prefix + ".index"));
    impl->files.push_back(prefix + ".index");
    if (impl->format == TfCheckpointFormat::kV2) {
      for (int shard = 0; shard < impl->num_shards; ++shard)
        impl->files.push_back(impl->shard_path(shard));
    }
  } else {
    const std::vector<std::string> shards = v1_shards(path);
    if (shards.empty()) {
      throw DataError("no TensorFlow checkpoint at " + in_quotes(given) + " (looked for " +
                      in_quotes(path + ".index") + ", " + in_quotes(path) + " and " +
                      in_quotes(path + "-00000-of-NNNNN") + ")");
    }
    impl->path = shards.front();
    for (const auto& file : shards) {
      if (!is_tf_checkpoint(file)) {
        throw DataError(in_quotes(file) + " is not a TensorFlow checkpoint (no table footer)");
      }
      impl->add_table(open_table_file(file));
      impl->files.push_back(file);
    }
  }
  impl->finish();
  return TfCheckpoint(std::move(impl));
}

TfCheckpoint TfCheckpoint::parse_table(std::string_view bytes, const std::string& shown) {
  auto impl = std::make_unique<Impl>();
  impl->path = ends_with(shown, ".index") ? shown.substr(0, shown.size() - 6) : shown;
  impl->add_table(open_table_bytes(bytes, shown));
  impl->files.push_back(shown);
  impl->finish();
  return TfCheckpoint(std::move(impl));
}

TfCheckpointFormat TfCheckpoint::format() const { return impl_->format; }
const std::string& TfCheckpoint::path() const { return impl_->path; }
const std::vector<std::string>& TfCheckpoint::files() const { return impl_->files; }
const std::vector<TfTensorInfo>& TfCheckpoint::tensors() const { return impl_->tensors; }

const TfTensorInfo* TfCheckpoint::find(const std::string& name) const {
  const auto& t = impl_->tensors;
  auto it =
      std::lower_bound(t.begin(), t.end(), name,
                       [](const TfTensorInfo& a, const std::string& n) { return a.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

TfTensor TfCheckpoint::read(const std::string& name) const {
  const TfTensorInfo* info = find(name);
  if (!info) throw DataError(in_quotes(impl_->path) + " has no tensor " + in_quotes(name));
  const std::string where = in_quotes(impl_->path) + ", tensor " + in_quotes(name);
  if (info->num_slices > 0) {
    throw DataError(where + " is a partitioned variable (" + std::to_string(info->num_slices) +
                    " slices): not supported; re-save it unpartitioned");
  }
  if (tf_dtype_bytes(info->dtype) == 0 && info->dtype != kTfString) {
    throw DataError(where + " has the type " + tf_dtype_name(info->dtype) +
                    ", which this reader does not decode");
  }
  TfTensor out;
  out.dtype = info->dtype;
  out.shape = info->shape;
  if (impl_->format == TfCheckpointFormat::kV2) {
    const std::string data =
        read_range(impl_->shard_path(info->shard_id), info->offset, info->size, where);
    if (info->dtype == kTfString) {
      v2_strings(data, *info, where, &out);
    } else {
      if (mask_crc(crc32c(data.data(), data.size())) != info->crc32c_masked) {
        throw DataError(where + ": CRC32C mismatch in " +
                        in_quotes(impl_->shard_path(info->shard_id)));
      }
      out.bytes = data;
    }
    return out;
  }
  if (info->key.empty()) throw DataError(where + ": its metadata is there, its values are not");
  const Table& table = impl_->tables.at(static_cast<size_t>(info->table));
  auto it = table.iterator();
  it->Seek(info->key);
  if (!it->Valid() || it->key().ToString() != info->key) {
    throw DataError(where + ": " +
                    (it->status().ok() ? "its values are gone" : it->status().ToString()));
  }
  tfckpt::SavedTensorSlices slices;
  if (!slices.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
      !slices.has_data() || slices.data().name() != name) {
    throw DataError(where + ": the slice's entry does not parse");
  }
  if (slices.data().has_slice() && !full_slice(slices.data().slice(), info->shape)) {
    throw DataError(where + ": the stored slice is not the whole tensor");
  }
  v1_values(slices.data().data(), *info, where, &out);
  return out;
}

bool is_tf_checkpoint(const std::string& path) {
  for (const std::string& p : {path, path + ".index"}) {
    // A device or a FIFO is never a checkpoint (and is not opened: a FIFO's
    // open would wait for a writer).
    if (!is_regular(p)) continue;
    std::ifstream in(p, std::ios::binary | std::ios::ate);
    if (!in) continue;
    const std::streamoff size = in.tellg();
    if (size < static_cast<std::streamoff>(kFooterBytes)) continue;
    char magic[8];
    in.seekg(size - 8);
    if (in.read(magic, 8) && load_le(magic, 8) == kTableMagic) return true;
  }
  return false;
}

}  // namespace fastnn::io
