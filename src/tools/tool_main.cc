#include "src/tools/tool_main.h"

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <system_error>

#include "fastnn/errors.h"
#include "src/io/protobuf_log.h"
#include "src/io/thread_limit.h"
#include "src/log/failure.h"

namespace fastnn::train {
namespace {

// OpenBLAS starts a thread per core as it loads, before main(), and raises
// SIGINT when one cannot start (ulimit -u): exit 130, as if stopped by
// Ctrl-C, and a core-sized pool under a limit sized for a few. The binaries
// run it on one thread anyway (configure_threads), so it is told so before
// it loads: an executable's .preinit_array runs before any library's
// initializer (this object is in every binary that calls tool_main).
void one_blas_thread(int, char**, char**) {
  ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/1);
}
__attribute__((section(".preinit_array"),
               used)) void (*const kOneBlasThread)(int, char**, char**) = one_blas_thread;

}  // namespace

int tool_main(int argc, char** argv, const std::string& program, const std::string& usage,
              const std::function<int(LoadResult&)>& body,
              const std::vector<std::string>& extra_keys) {
  io::route_protobuf_log();
  // Past a file size limit (ulimit -f) a write fails with EFBIG, and the
  // error names its file (exit 3), instead of SIGXFSZ ending the process
  // without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    LoadResult args = load_hparams(argc, argv, extra_keys);
    if (args.help) {
      std::cout << format_help(program, usage);
      return kExitOk;
    }
    if (args.version) {
      // The LibTorch it was built against: Debian's (the default) or
      // another (scripts/setup.sh --torch / --torch-pypi).
      std::cout << program << " " << FASTNN_VERSION << " (LibTorch " << TORCH_VERSION << ")\n";
      return kExitOk;
    }
    for (const auto& warning : args.warnings) std::cerr << "warning: " << warning << "\n";
    return body(args);
  } catch (...) {
    return report_failure(program, tool_failure_of(std::current_exception()));
  }
}

Failure tool_failure_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& x) {
    if (io::is_thread_limit(x)) {
      return {kExitUsage, "error: ",
              io::thread_limit_message("",
                                       "lower num_preprocessing_threads and "
                                       "intra_op_parallelism_threads, or raise the limit")};
    }
  } catch (const c10::OutOfMemoryError& x) {
    // One the trainer and evaluator did not name the batch size for.
    return {kExitOutOfMemory,
            "out of memory (lower batch_size or eval_batch_size): ", x.what_without_backtrace()};
  } catch (const c10::Error& x) {
    return {kExitInternal, "internal error (LibTorch): ", x.what_without_backtrace()};
  } catch (...) {
  }
  return failure_of(e);
}

}  // namespace fastnn::train
