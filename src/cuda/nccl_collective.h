// The trainer's collectives over NCCL (dist::Collective for CUDA tensors):
// gradient buckets are all-reduced on a dedicated stream that first waits,
// on the GPU, for the event recorded when backward finished the bucket.
// Built only with a CUDA LibTorch and NCCL.
#pragma once

#include <memory>

#include "src/dist/collective.h"
#include "src/dist/kv_store.h"
#include "src/dist/nccl_communicator.h"

namespace fastnn::dist {

/// Joins the NCCL communicator of the job (the unique id travels through
/// `store`, the coordinator's key-value store) on CUDA device
/// `options.device`. Tensors given on the CPU (metrics, counters) are
/// staged through the device. Every wait is bounded by options.timeout; a
/// timeout or an NCCL error aborts the communicator (ncclCommAbort) and
/// throws DistributedError naming the rank, the operation and the step.
std::unique_ptr<Collective> make_nccl_collective(KeyValueStore& store,
                                                 const NcclOptions& options);

}  // namespace fastnn::dist
