// The trainer's Collective over one of c10d's process groups: Gloo for CPU
// tensors, NCCL for CUDA tensors (c10d::ProcessGroupNCCL, which handles
// NCCL's non-blocking communicators, its asynchronous errors, stream order
// and the allocator's recordStream). Both are built from the same store
// adapter over the job's coordinator, under a prefix of their own.
//
// Waiting: Gloo's wait() blocks the host (CPU tensors are computed by the
// host anyway); NCCL's wait() makes the current CUDA stream wait for the
// collective's event and returns at once (as DDP). Every host-blocking wait
// is bounded by the options' timeout; NCCL's own watchdog aborts a
// collective that outlives it (CleanUpOnly: the communicators are aborted,
// the process is not). A timeout or a lost peer throws DistributedError
// (exit 5) naming the operation, the rank and the global step.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <utility>
#include <vector>

#include "src/dist/collective.h"

namespace fastnn::dist {

struct CommunicatorOptions {
  int rank = 0;
  int world_size = 1;
  /// Bound of rendezvous and of every collective. Default: 60 s.
  std::chrono::milliseconds timeout{60000};
  /// The coordinator's host: Gloo listens on the local address that routes
  /// to it (GLOO_SOCKET_IFNAME, when set, wins). Empty: loopback.
  std::string coordinator_host;
  /// NCCL: this process's CUDA device. Gloo: unused (CPU).
  int cuda_device = 0;
};

/// Joins a Gloo process group through `store` (all ranks connected on
/// return). DistributedError when the rendezvous fails or times out.
std::unique_ptr<Collective> connect_gloo(c10::intrusive_ptr<c10d::Store> store,
                                         const CommunicatorOptions& options);

/// Joins an NCCL process group on cuda:options.cuda_device through `store`.
/// ConfigError (exit 2) in a build without c10d's NCCL (a CPU LibTorch) or
/// when that device does not exist; DistributedError when joining fails.
std::unique_ptr<Collective> connect_nccl(c10::intrusive_ptr<c10d::Store> store,
                                         const CommunicatorOptions& options);

/// True when this build carries c10d's ProcessGroupNCCL.
bool nccl_built();

/// The environment connect_nccl sets before c10d's NCCL group reads it, so
/// that our deadline, not c10d's, ends a failed job (with exit 5, naming
/// the rank): async error handling CleanUpOnly (2: a failed or timed-out
/// collective aborts the communicators and its work reports the error; the
/// process is not killed), no heartbeat monitor (it would SIGABRT), no
/// debug dump on timeout, and non-blocking waits. Pure, for tests.
std::map<std::string, std::string> nccl_environment();

/// The local address (numeric) a socket toward `host` leaves from; "" when
/// `host` does not resolve.
std::string local_address_toward(const std::string& host);

}  // namespace fastnn::dist
