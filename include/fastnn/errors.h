// Error types and the process exit codes they map to (README.md, "Exit codes").
#pragma once

#include <stdexcept>
#include <string>

namespace fastnn {

/// Process exit codes; sweeps and schedulers depend on these values.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,
  kExitUsage = 2,
  kExitData = 3,
  kExitDiverged = 4,
  kExitDistributed = 5,
  /// A second SIGINT/SIGTERM ended the run before its final checkpoint was
  /// written (the last periodic checkpoint is intact).
  kExitStoppedUnsaved = 6,
  /// The training device ran out of memory (CUDA's caching allocator, or
  /// page-locking the input's staging buffers); the message names the
  /// batch size and the device.
  kExitOutOfMemory = 7,
  kExitSigint = 130,
  kExitSigterm = 143,
};

/// Bad usage or configuration: unknown key, bad value, unknown name (exit 2).
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Missing, unreadable or corrupt input data (exit 3).
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Loss or gradients became NaN/Inf (exit 4).
class DivergedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Rendezvous timeout, lost peer, collective timeout (exit 5).
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The device ran out of memory, with what to change (exit 7). LibTorch's
/// own c10::OutOfMemoryError becomes one where the batch size is known.
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fastnn
