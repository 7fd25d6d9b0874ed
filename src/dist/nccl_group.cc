// connect_nccl: c10d's ProcessGroupNCCL behind the trainer's Collective.
// Compiled in every build; the NCCL side only where CMake found a CUDA
// LibTorch and nccl.h (FASTNN_WITH_C10D_NCCL), so a CPU build refuses
// device=cuda with more than one worker cleanly instead of not linking.
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "fastnn/errors.h"
#include "src/compat/torch_compat.h"
#include "src/dist/process_group.h"
#include "src/log/log.h"

#if FASTNN_WITH_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <future>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "src/dist/process_group_collective.h"
#endif

namespace fastnn::dist {

std::map<std::string, std::string> nccl_environment() {
  // Before 2.2 c10d reads NCCL_*; from 2.2 TORCH_NCCL_* (and warns on the
  // old names).
#if FASTNN_TORCH_AT_LEAST(2, 2)
  const std::string prefix = "TORCH_NCCL_";
#else
  const std::string prefix = "NCCL_";
#endif
  return {
      {prefix + "ASYNC_ERROR_HANDLING", "2"},
      {prefix + "BLOCKING_WAIT", "0"},
      {"TORCH_NCCL_ENABLE_MONITORING", "0"},
      {"TORCH_NCCL_DUMP_ON_TIMEOUT", "0"},
  };
}

bool nccl_built() {
#if FASTNN_WITH_C10D_NCCL
  return true;
#else
  return false;
#endif
}

#if FASTNN_WITH_C10D_NCCL
namespace {

// Sets what c10d reads at construction; a different value the user set is
// replaced, with a warning: the job's exit codes depend on it.
void apply_nccl_environment() {
  for (const auto& [name, value] : nccl_environment()) {
    const char* old = std::getenv(name.c_str());
    if (old && value != old) {
      log::warning() << name << "=" << old << " replaced by " << value
                     << ": a failed collective must end the job with exit 5, not SIGABRT";
    }
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

// Aborting NCCL communicators can itself hang (NVIDIA/nccl#829): the abort
// runs on a thread of its own, and a process whose abort has not returned
// within the deadline ends with _exit(5) (a clean run's teardown takes
// milliseconds).
void bounded_abort(c10::intrusive_ptr<c10d::ProcessGroupNCCL> group, int rank,
                   std::chrono::milliseconds deadline) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([group = std::move(group), done] {
    try {
      group->abort();
    } catch (...) {
    }
    done->set_value();
  }).detach();
  if (finished.wait_for(deadline) == std::future_status::ready) return;
  log::warning() << "NCCL: aborting rank " << rank << "'s communicators took over "
                 << deadline.count() / 1000 << " s; exiting";
  std::_Exit(kExitDistributed);
}

}  // namespace
#endif

std::unique_ptr<Collective> connect_nccl(c10::intrusive_ptr<c10d::Store> store,
                                         const CommunicatorOptions& options) {
#if FASTNN_WITH_C10D_NCCL
  const int devices = static_cast<int>(c10::cuda::device_count());
  if (options.cuda_device < 0 || options.cuda_device >= devices) {
    throw ConfigError("NCCL: rank " + std::to_string(options.rank) +
                      " asks for cuda:" + std::to_string(options.cuda_device) +
                      ", and this process sees " + std::to_string(devices) + " CUDA device(s)");
  }
  apply_nccl_environment();
  auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
  nccl_options->timeout = options.timeout;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group;
  try {
    group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, options.rank, options.world_size,
                                                        nccl_options);
  } catch (const std::exception& e) {
    throw DistributedError("NCCL process group of " + std::to_string(options.world_size) +
                           " workers (rank " + std::to_string(options.rank) +
                           ") failed: " + std::string(e.what()).substr(0, 400));
  }
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(options.cuda_device));
  auto teardown = [group, rank = options.rank] {
    bounded_abort(group, rank, std::chrono::seconds(10));
  };
  return std::make_unique<ProcessGroupCollective>("NCCL", std::move(store), group, options, device,
                                                  std::move(teardown));
#else
  (void)store;
  throw ConfigError("device=cuda with " + std::to_string(options.world_size) +
                    " workers needs NCCL, and this build has none (a CPU LibTorch, or nccl.h "
                    "not found: CMake's NCCL_ROOT); device=cpu trains over Gloo");
#endif
}

}  // namespace fastnn::dist
