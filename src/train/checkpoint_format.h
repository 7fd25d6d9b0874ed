// The checkpoint file format, without LibTorch: the byte layout, its CRC and
// the validation of every declared size, so that the reader can be fuzzed
// (fuzz/checkpoint_fuzz.cc) and a CRC-valid but forged file can never make
// it allocate or copy more than the file holds.
//
// Layout (little-endian):
//   "FNNCKPT1"  u32 count  { u32 name_len, name, u8 dtype, u8 ndim,
//                            i64 dims[ndim], u64 nbytes, bytes }*  u32 crc32c
// The CRC covers every byte before it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::train {

/// Element types, by their code in the file.
enum class DTypeCode : uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt64 = 2,
  kUInt8 = 3,
  kInt32 = 4,
  kBFloat16 = 5,
  kFloat16 = 6,
};

/// Bytes per element of a code; 0 for a code that is not a DTypeCode.
size_t element_bytes(uint8_t code);

/// One tensor of a parsed file; `data` points into the parsed bytes.
struct CheckpointEntry {
  std::string name;
  DTypeCode dtype = DTypeCode::kFloat32;
  std::vector<int64_t> dims;
  std::string_view data;
};

/// The file's tensors, in file order. Throws DataError naming `path` when
/// the bytes are not a checkpoint, fail the CRC, are truncated, or declare
/// a dtype, shape or size that is invalid or disagrees with the bytes (a
/// negative dimension, an element count that overflows, nbytes not equal
/// to elements x element size, more than the file holds, a repeated name).
std::vector<CheckpointEntry> parse_checkpoint(std::string_view bytes, const std::string& path);

/// Appends one entry in the file's layout (the writer's half).
void append_checkpoint_entry(std::string* out, const std::string& name, DTypeCode dtype,
                             const std::vector<int64_t>& dims, std::string_view data);

/// The header: magic and count.
std::string checkpoint_header(uint32_t count);

/// Appends the CRC of everything in *out.
void append_checkpoint_crc(std::string* out);

}  // namespace fastnn::train
