// c10d's process-group base type, which differs between the LibTorch
// versions this project builds against: ProcessGroupGloo and
// ProcessGroupNCCL derive from c10d::ProcessGroup in 1.13 and from
// c10d::Backend in 2.x. Both bases declare the same virtual collectives
// (allreduce, broadcast, barrier) with the same signatures, so the rest of
// the code holds a ProcessGroupBackend and reads the same on every version.
#pragma once

#include "src/compat/torch_compat.h"

#if FASTNN_TORCH_AT_LEAST(2, 0)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace fastnn::compat {

#if FASTNN_TORCH_AT_LEAST(2, 0)
using ProcessGroupBackend = c10d::Backend;
#else
using ProcessGroupBackend = c10d::ProcessGroup;
#endif

}  // namespace fastnn::compat
