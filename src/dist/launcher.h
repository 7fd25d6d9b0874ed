// The local launcher behind --nproc_per_node=N (torchrun's convention): starts
// N worker processes of the same binary with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and FASTNN_JOB_TOKEN set,
// forwards SIGINT/SIGTERM to them, and when one fails stops the others.
// Exit code: 0 when every worker exits 0; otherwise the first failing
// worker's code, 5 (kExitDistributed) when it was killed by a signal.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "src/dist/cluster.h"

namespace fastnn::dist {

struct LaunchOptions {
  /// The worker executable (the launcher's own binary in production).
  std::string program;
  /// The workers' arguments (argv[1..]); see worker_args().
  std::vector<std::string> args;
  /// Workers to start here: ranks first_rank .. first_rank + nproc - 1.
  /// REQUIRES: >= 1.
  int nproc = 1;
  int first_rank = 0;
  /// Workers in the whole job (several nodes); 0: nproc.
  int world_size = 0;
  /// The chief's coordinator; port 0: a free port picked here.
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  /// FASTNN_JOB_TOKEN for the workers; empty: leave the environment's.
  std::string token;
  /// After a worker fails: SIGTERM to the others, SIGKILL after `grace`.
  std::chrono::milliseconds grace{10000};
  /// The environment the workers inherit (plus the variables above).
  Environment env;
};

/// Runs the workers to the end; returns the launcher's exit code. Blocks
/// until every worker has exited (bounded by `grace` once one failed; a
/// second forwarded signal kills the workers).
int launch(const LaunchOptions& options);

/// argv[1..] without any --nproc_per_node, then --nproc_per_node=1 (the
/// command line wins over a config file's value).
std::vector<std::string> worker_args(int argc, const char* const* argv);

/// The launch for a spec with launch_workers > 0: this binary, the job's
/// token (job_token_file, else FASTNN_JOB_TOKEN, else a random one when the
/// job is on this machine only; ConfigError for a multi-node job without).
LaunchOptions launch_options(const ClusterSpec& spec, const HParams& hp, const Environment& env,
                             int argc, const char* const* argv);

}  // namespace fastnn::dist
