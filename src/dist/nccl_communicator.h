// Collectives on CUDA device memory through NCCL, called directly (the
// LibTorch this project builds against may be CPU-only, so c10d's NCCL
// group is not used). Built only where CMake finds the CUDA toolkit and
// NCCL (FASTNN_HAVE_NCCL). The unique id is made on rank 0 and travels
// through the job's KeyValueStore. Every wait is bounded; an NCCL error or
// a timeout aborts the communicator and throws DistributedError (exit 5)
// with ncclGetErrorString's text.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/dist/kv_store.h"

namespace fastnn::dist {

/// Throws DistributedError "<what>: NCCL error <code> (<ncclGetErrorString>)"
/// unless `result` is ncclSuccess (0). `result` is an ncclResult_t.
void check_nccl(int result, const std::string& what);

/// Rank 0: a fresh ncclUniqueId, published under `key`. Other ranks: the id
/// rank 0 published (waits up to the store's timeout). Returns its bytes.
std::vector<uint8_t> exchange_nccl_unique_id(KeyValueStore& store, int rank,
                                             const std::string& key);

struct NcclOptions {
  int rank = 0;
  int world_size = 1;
  /// CUDA device of this process (one process per device).
  int device = 0;
  /// Bound of initialization and of each synchronize(). Default: 60 s.
  std::chrono::milliseconds timeout{60000};
};

enum class NcclType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64 };

class NcclCommunicator {
 public:
  /// Exchanges the unique id through `store` and initializes the
  /// communicator (non-blocking init, polled up to options.timeout).
  NcclCommunicator(KeyValueStore& store, const NcclOptions& options);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  /// In-place sum of `count` elements at device pointer `data`, enqueued on
  /// `stream` (a cudaStream_t; nullptr = the default stream).
  void all_reduce_sum(void* data, size_t count, NcclType type, void* stream);
  /// Rank 0's `count` elements to every rank, in place.
  void broadcast(void* data, size_t count, NcclType type, void* stream);
  /// Waits until `stream` has finished, polling NCCL's asynchronous error;
  /// aborts and throws DistributedError naming `what` after the timeout.
  void synchronize(void* stream, const std::string& what);

 private:
  void wait_ready(const std::string& what);
  /// True when initialization finished without error; false while in
  /// progress before `deadline`; otherwise aborts and throws.
  bool poll(const std::string& what, std::chrono::steady_clock::time_point deadline);
  NcclOptions options_;
  void* comm_ = nullptr;  // ncclComm_t
};

}  // namespace fastnn::dist
