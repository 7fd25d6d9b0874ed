// Checkpoint files and the train_dir index.
//
// File format (little-endian), written atomically (temp + fsync + rename):
//   "FNNCKPT1"  u32 count  { u32 name_len, name, u8 dtype, u8 ndim,
//                            i64 dims[ndim], u64 nbytes, bytes }*  u32 crc32c
// The CRC covers every byte before it. The index file `checkpoint` uses
// TF's text form: model_checkpoint_path: "model.ckpt-<step>".
#pragma once

#include <torch/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fastnn::train {

using TensorMap = std::map<std::string, torch::Tensor>;

/// Writes `tensors` to `path` atomically. Throws DataError on I/O errors.
void save_tensors(const std::string& path, const TensorMap& tensors);

/// Reads a file written by save_tensors; DataError if missing or corrupt.
TensorMap load_tensors(const std::string& path);

/// Keeps model.ckpt-<step> files and the index in a train_dir.
class CheckpointManager {
 public:
  /// max_to_keep = 0 keeps every checkpoint.
  CheckpointManager(std::string dir, int64_t max_to_keep);

  /// Path of the newest checkpoint named by the index, if any.
  std::optional<std::string> latest() const;
  /// Writes model.ckpt-<step>, updates the index, prunes old files.
  std::string save(int64_t step, const TensorMap& tensors);

 private:
  std::string dir_;
  int64_t max_to_keep_;
  std::vector<std::string> kept_;
};

/// A checkpoint file itself, or a train_dir's latest. Throws DataError
/// when nothing is found.
std::string resolve_checkpoint(const std::string& path);

}  // namespace fastnn::train
