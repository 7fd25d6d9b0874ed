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

#include "src/io/tf_checkpoint.h"

namespace fastnn::train {

using TensorMap = std::map<std::string, torch::Tensor>;

/// Writes `tensors` to `path` atomically. Throws DataError on I/O errors.
void save_tensors(const std::string& path, const TensorMap& tensors);

/// Reads a file written by save_tensors, or a TensorFlow checkpoint (told
/// apart by their bytes) converted to this port's keys ("model/<name>",
/// suffixes such as /ExponentialMovingAverage kept) and layouts (OIHW,
/// [out,in]); DataError if missing or corrupt.
TensorMap load_tensors(const std::string& path);

/// A TensorFlow tensor's values as a LibTorch tensor of its type and TF's
/// shape (no layout change); nullopt for a type LibTorch does not hold
/// (string, unsigned 16-64-bit).
std::optional<torch::Tensor> torch_tensor_of(const io::TfTensor& t);

/// The shape a TensorFlow variable has in this port (load_tensors' layouts):
/// conv kernels HWIO -> OIHW, TF-slim's ".../depthwise_weights" [kh,kw,C,M]
/// -> [C*M,1,kh,kw] (their moving averages and slots too), fully-connected
/// [in,out] -> [out,in]; any other rank unchanged.
std::vector<int64_t> port_shape_of_tf(const std::string& tf_name,
                                      const std::vector<int64_t>& tf_shape);

/// What save_tf_checkpoint wrote, by kind, and the keys it left out.
struct TfExport {
  int variables = 0;        // model variables and BatchNorm statistics
  int moving_averages = 0;  // ".../ExponentialMovingAverage"
  int optimizer_slots = 0;  // ".../Momentum", "beta1_power", ...
  bool global_step = false;
  std::vector<std::string> left_out;  // no TensorFlow counterpart
};

/// Writes a checkpoint of ours (load_tensors' keys and layouts) as the
/// TensorFlow V2 checkpoint `prefix` (io::write_tf_bundle), under TF-slim's
/// names and layouts, the inverse of load_tensors: "model/<name>" and
/// "optimizer/<name>" become "<name>" (moving averages and TF1's slot names
/// keep their suffix); conv kernels OIHW -> HWIO, depthwise [C,1,kh,kw] ->
/// [kh,kw,C,1] (TF-slim's networks use a depth multiplier of 1),
/// fully-connected [out,in] -> [in,out]; "global_step" stays. The input
/// position, loss scale and generator states have no TensorFlow
/// counterpart and are left out. Throws DataError when a file cannot be
/// written.
TfExport save_tf_checkpoint(const std::string& prefix, const TensorMap& tensors);

/// The model.ckpt-<step> files of `dir`, newest first (none is read;
/// temporaries and other names never count).
std::vector<std::string> checkpoint_files(const std::string& dir);

/// The newest readable checkpoint of a train_dir, read.
struct LatestCheckpoint {
  std::string path;
  TensorMap tensors;
};

/// The newest model.ckpt-<step> in `dir` that reads (CRC checked). The
/// `checkpoint` index is a convenience, not the truth: when it is missing,
/// empty, garbage or names another file, or when the newest file is
/// corrupt, the newest readable file wins, with a warning on stderr for
/// each file passed over. nullopt when `dir` has no model.ckpt-* file.
/// Throws DataError when it has some but none reads (starting over would
/// overwrite them).
std::optional<LatestCheckpoint> find_latest_checkpoint(const std::string& dir);

/// Keeps model.ckpt-<step> files and the index in a train_dir, which it
/// holds for this process alone.
class CheckpointManager {
 public:
  /// Creates `dir` and takes an exclusive lock on it (dir/.lock, released
  /// by the kernel when the process ends): a second trainer on the same
  /// train_dir is a ConfigError, as is a train_dir that cannot be created.
  /// Removes the temporaries of dead processes (a checkpoint cut by
  /// SIGKILL). max_to_keep = 0 keeps every checkpoint.
  CheckpointManager(std::string dir, int64_t max_to_keep);
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  /// find_latest_checkpoint(dir).
  std::optional<LatestCheckpoint> latest() const;
  /// Writes model.ckpt-<step>, updates the index, prunes old files.
  std::string save(int64_t step, const TensorMap& tensors);

 private:
  std::string dir_;
  int64_t max_to_keep_;
  std::vector<std::string> kept_;
  int lock_fd_ = -1;
};

/// A checkpoint file itself, or a train_dir's newest readable one
/// (find_latest_checkpoint), or a TensorFlow checkpoint as TensorFlow users
/// name it (io::TfCheckpoint::open: a V2 prefix, its .index or .data file,
/// a V1 file, a directory with a 'checkpoint' file), resolved to its V2
/// prefix or V1 file. Throws DataError when nothing is found.
std::string resolve_checkpoint(const std::string& path);

}  // namespace fastnn::train
