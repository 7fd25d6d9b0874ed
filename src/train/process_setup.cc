#include "src/train/process_setup.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "fastnn/errors.h"
#include "src/io/thread_limit.h"
#include "src/log/log.h"

namespace fastnn::train {

namespace {

// Threads beyond the counted ones that a run may start (CUDA's, a margin).
constexpr int kSpareThreads = 2;

}  // namespace

namespace {

// The threads this run starts: OpenMP's team and LibTorch's pthreadpool
// for intra-op work, and a reader and the decoders for each input
// pipeline.
int threads_needed(int intra, int decoders, int pipelines) {
  return 2 * intra - 1 + pipelines * (1 + decoders);
}

// Under a process limit (ulimit -u) LibTorch's pool waits forever for a
// thread that could not start and OpenMP exits: what is left is shared out
// first. {intra-op threads, decoders per pipeline}.
std::pair<int, int> share_startable_threads(int want_intra, int want_decoders, int pipelines) {
  const int room =
      io::startable_threads(threads_needed(want_intra, want_decoders, pipelines) + kSpareThreads);
  int intra = want_intra, decoders = want_decoders;
  while (threads_needed(intra, decoders, pipelines) + kSpareThreads > room &&
         (intra > 1 || decoders > 1)) {
    if (intra > 1 && (decoders == 1 || 2 * intra >= pipelines * decoders)) {
      --intra;
    } else {
      --decoders;
    }
  }
  if (threads_needed(intra, decoders, pipelines) > room) {
    throw ConfigError(io::thread_limit_message(
        "intra_op_parallelism_threads, num_preprocessing_threads",
        "this run needs " + std::to_string(threads_needed(1, 1, pipelines)) +
            " more threads at least, " + std::to_string(room) + " can start"));
  }
  if (intra < want_intra || decoders < want_decoders) {
    auto line = log::warning();
    line << "only " << room << " more threads can start (ulimit -u, or the container's pids "
         << "limit): lowered";
    if (intra < want_intra)
      line << " intra_op_parallelism_threads " << want_intra << " -> " << intra;
    if (decoders < want_decoders) {
      line << " num_preprocessing_threads " << want_decoders << " -> " << decoders;
    }
  }
  return {intra, decoders};
}

// LibTorch already splits work across its intra-op threads; a BLAS that
// threads each call on its own oversubscribes the cores.
void single_threaded_blas() {
  // MKL (PyPI's LibTorch) threads with LibTorch's own OpenMP team, which
  // torch::set_num_threads sizes.
  if (at::hasMKL()) return;
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(1);
    return;
  }
  static bool warned = false;
  if (!warned) {
    log::warning() << "OpenBLAS is not the active BLAS; matrix products "
                      "will be far slower (apt-get install libopenblas0-pthread)";
    warned = true;
  }
}

}  // namespace

int configure_threads(HParams& hp, int pipelines) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  // 0 means "LibTorch's default", which is one thread on some builds; use
  // every core instead.
  const int64_t asked = hp.intra_op_parallelism_threads;
  const int want_intra = static_cast<int>(asked <= 0 ? cores : std::min<int64_t>(asked, cores));
  const int want_decoders =
      static_cast<int>(std::clamp<int64_t>(hp.num_preprocessing_threads, 1, 1 << 16));
  const auto [intra, decoders] = share_startable_threads(want_intra, want_decoders, pipelines);
  if (decoders < want_decoders) {
    hp.num_preprocessing_threads = decoders;
    hp.sources["num_preprocessing_threads"] = "lowered to what can start (ulimit -u)";
  }
  if (intra < want_intra) {
    hp.intra_op_parallelism_threads = intra;
    hp.sources["intra_op_parallelism_threads"] = "lowered to what can start (ulimit -u)";
  }
  at::set_num_threads(intra);
  single_threaded_blas();
  return intra;
}

// glibc hands allocations above 128 KiB to mmap and trims freed heap above
// 128 KiB back to the kernel (both thresholds adapt, but only so far), and a
// step frees and allocates the same tensors again: the next step's pages
// are faulted in and zeroed anew. With Debian's LibTorch 1.13, lenet's step
// (batch 128) then spends a large part of its run in the kernel's page
// faults; with tensors up to 32 MiB (the largest mmap threshold glibc
// accepts) from the heap and up to 256 MiB of freed heap kept, it trains
// faster (docs/performance.md). Larger tensors (resnet's activations) still
// come from mmap.
void keep_freed_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 32 << 20);
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 256 << 20);
  });
}

}  // namespace fastnn::train
