// TensorFlow checkpoints, both formats, without TensorFlow:
//   V2  PREFIX.index (a LevelDB-format table: "" -> BundleHeaderProto, each
//       variable's name -> BundleEntryProto) + PREFIX.data-SSSSS-of-NNNNN
//       (the raw bytes; each entry carries their masked CRC32C);
//   V1  one or more files, each a LevelDB-format table of SavedTensorSlices
//       ("" -> the metadata: names, shapes, types; an OrderedCode key per
//       slice -> its values as a TensorProto).
// The tables are read by LevelDB itself (block checksums verified), the
// values by protobuf (src/io/tf_checkpoint.proto). Nothing here needs
// LibTorch; the mapping onto a network lives with the networks.
//
// Every declared size is checked before it is used: a forged index can make
// the reader refuse, never allocate or read more than the files hold. Errors
// are DataError (exit 3) naming the file and, where there is one, the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::io {

enum class TfCheckpointFormat { kV1, kV2 };

/// TensorFlow's DataType codes this reader decodes (types.proto).
enum TfDType : int {
  kTfInvalid = 0,
  kTfFloat = 1,
  kTfDouble = 2,
  kTfInt32 = 3,
  kTfUInt8 = 4,
  kTfInt16 = 5,
  kTfInt8 = 6,
  kTfString = 7,
  kTfComplex64 = 8,
  kTfInt64 = 9,
  kTfBool = 10,
  kTfBFloat16 = 14,
  kTfUInt16 = 17,
  kTfComplex128 = 18,
  kTfHalf = 19,
  kTfUInt32 = 22,
  kTfUInt64 = 23,
};

/// TensorFlow's name of a type, as its Python prints it ("float32",
/// "bfloat16", "string"); "DT_<code>" for one this reader
/// does not decode.
std::string tf_dtype_name(int dtype);

/// Bytes per element; 0 for strings and for types this reader does not decode.
size_t tf_dtype_bytes(int dtype);

/// What the index says of one variable.
struct TfTensorInfo {
  std::string name;
  int dtype = kTfInvalid;
  std::vector<int64_t> shape;
  int64_t num_elements = 0;
  /// > 0 for a partitioned variable (saved in slices); reading one is refused.
  int num_slices = 0;
  // V2: where its bytes are.
  int shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc32c_masked = 0;
  // V1: which table and key hold its one slice.
  int table = 0;
  std::string key;
};

/// One variable's values: `bytes` holds num_elements elements, row-major,
/// little-endian, tf_dtype_bytes() each; `strings` for DT_STRING.
struct TfTensor {
  int dtype = kTfInvalid;
  std::vector<int64_t> shape;
  std::string bytes;
  std::vector<std::string> strings;
};

class TfCheckpoint {
 public:
  /// Opens a checkpoint named as TensorFlow users name it: a V2 prefix
  /// (".../model.ckpt-1000000"), its ".index" or a ".data-*" file, a V1
  /// file (or a V1 shard, or a "-?????-of-NNNNN" pattern, or the prefix of
  /// V1 shards), or a directory whose "checkpoint" file names one. The
  /// format is told by the files' bytes, not their names. DataError (exit 3)
  /// when nothing readable is there: the message says what was looked for.
  static TfCheckpoint open(const std::string& path);

  /// Parses a table (a V2 .index or a V1 file) held in memory; `shown` names
  /// it in errors. A V2 checkpoint parsed so reads its data from files next
  /// to `shown`. For the fuzzer and for tests.
  static TfCheckpoint parse_table(std::string_view bytes, const std::string& shown);

  TfCheckpoint(TfCheckpoint&&) noexcept;
  TfCheckpoint& operator=(TfCheckpoint&&) noexcept;
  ~TfCheckpoint();

  TfCheckpointFormat format() const;
  /// The V2 prefix, or the V1 file (the first shard's).
  const std::string& path() const;
  /// The files the checkpoint is made of.
  const std::vector<std::string>& files() const;
  /// Every variable, sorted by name (bytewise, as TensorFlow lists them).
  const std::vector<TfTensorInfo>& tensors() const;
  /// nullptr when there is no variable of that name.
  const TfTensorInfo* find(const std::string& name) const;

  /// Reads and checks one variable's values. DataError naming the file and
  /// the variable for bytes that disagree with the index (CRC, size, count),
  /// for a partitioned variable, a type this reader does not decode, or an
  /// unknown name.
  TfTensor read(const std::string& name) const;

 private:
  struct Impl;
  explicit TfCheckpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The model_checkpoint_path that the text of a TensorFlow "checkpoint"
/// state file names, with protobuf text format's string escapes decoded
/// (TF writes a non-ASCII name as octal escapes: "mod\303\250le"); nullopt
/// when the text names none or its string does not parse.
std::optional<std::string> checkpoint_state_path(std::string_view text);

/// True when the file at `path` is a LevelDB-format table (a V1 checkpoint
/// or a V2 index), by its footer's magic number, or when `path` + ".index"
/// is one. Our own checkpoints start with "FNNCKPT1" and are never that.
bool is_tf_checkpoint(const std::string& path);

}  // namespace fastnn::io
