#include "src/dist/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "fastnn/errors.h"

namespace fastnn::dist {
namespace {

using Clock = std::chrono::steady_clock;

ncclComm_t as_comm(void* c) {
  return static_cast<ncclComm_t>(c);
}

ncclDataType_t to_nccl(NcclType t) {
  switch (t) {
    case NcclType::kFloat32:
      return ncclFloat32;
    case NcclType::kFloat16:
      return ncclFloat16;
    case NcclType::kBFloat16:
      return ncclBfloat16;
    case NcclType::kFloat64:
      return ncclFloat64;
    case NcclType::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) {
    throw DistributedError(what + ": CUDA error " + std::to_string(static_cast<int>(e)) +
                           " (" + cudaGetErrorString(e) + ")");
  }
}

}  // namespace

void check_nccl(int result, const std::string& what) {
  if (result == ncclSuccess) return;
  throw DistributedError(what + ": NCCL error " + std::to_string(result) + " (" +
                         ncclGetErrorString(static_cast<ncclResult_t>(result)) + ")");
}

std::vector<uint8_t> exchange_nccl_unique_id(KeyValueStore& store, int rank,
                                             const std::string& key) {
  if (rank == 0) {
    ncclUniqueId id;
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<uint8_t> bytes(sizeof(id.internal));
    std::memcpy(bytes.data(), id.internal, bytes.size());
    store.set(key, bytes);
    return bytes;
  }
  auto bytes = store.get(key);
  if (bytes.size() != sizeof(ncclUniqueId::internal)) {
    throw DistributedError("NCCL unique id under '" + key + "' has " +
                           std::to_string(bytes.size()) + " bytes, not " +
                           std::to_string(sizeof(ncclUniqueId::internal)));
  }
  return bytes;
}

NcclCommunicator::NcclCommunicator(KeyValueStore& store, const NcclOptions& options)
    : options_(options) {
  check_cuda(cudaSetDevice(options.device), "cudaSetDevice(" + std::to_string(options.device) + ")");
  const auto bytes = exchange_nccl_unique_id(store, options.rank, "fastnn/nccl/unique_id");
  ncclUniqueId id;
  std::memcpy(id.internal, bytes.data(), bytes.size());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so a missing peer cannot hang initialization
  ncclComm_t comm = nullptr;
  const ncclResult_t r =
      ncclCommInitRankConfig(&comm, options.world_size, id, options.rank, &config);
  comm_ = comm;
  if (r != ncclInProgress) check_nccl(r, "ncclCommInitRankConfig");
  wait_ready("NCCL initialization");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(as_comm(comm_));
}

bool NcclCommunicator::poll(const std::string& what,
                            std::chrono::steady_clock::time_point deadline) {
  ncclResult_t state = ncclSuccess;
  check_nccl(ncclCommGetAsyncError(as_comm(comm_), &state), what);
  if (state == ncclSuccess) return true;
  const bool timed_out = Clock::now() > deadline;
  if (state == ncclInProgress && !timed_out) return false;
  ncclCommAbort(as_comm(comm_));
  comm_ = nullptr;
  if (state != ncclInProgress) check_nccl(state, what);
  throw DistributedError(what + " timed out after " +
                         std::to_string(options_.timeout.count() / 1000) + " s");
}

void NcclCommunicator::wait_ready(const std::string& what) {
  const auto deadline = Clock::now() + options_.timeout;
  while (!poll(what, deadline)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void NcclCommunicator::all_reduce_sum(void* data, size_t count, NcclType type, void* stream) {
  const ncclResult_t r = ncclAllReduce(data, data, count, to_nccl(type), ncclSum, as_comm(comm_),
                                       static_cast<cudaStream_t>(stream));
  if (r != ncclInProgress) check_nccl(r, "ncclAllReduce");
}

void NcclCommunicator::broadcast(void* data, size_t count, NcclType type, void* stream) {
  const ncclResult_t r = ncclBroadcast(data, data, count, to_nccl(type), 0, as_comm(comm_),
                                       static_cast<cudaStream_t>(stream));
  if (r != ncclInProgress) check_nccl(r, "ncclBroadcast");
}

void NcclCommunicator::synchronize(void* stream, const std::string& what) {
  wait_ready(what);
  const auto deadline = Clock::now() + options_.timeout;
  auto s = static_cast<cudaStream_t>(stream);
  for (;;) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) check_cuda(e, what);
    // A kernel still running past the deadline counts as a timeout too.
    if (poll(what, deadline) && Clock::now() > deadline) {
      ncclCommAbort(as_comm(comm_));
      comm_ = nullptr;
      throw DistributedError(what + " timed out after " +
                             std::to_string(options_.timeout.count() / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace fastnn::dist
