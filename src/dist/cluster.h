// Where this process sits in the job: rank, world size, local rank, the
// coordinator's address, and where each value came from (docs/design.md, "Distributed control
// plane"). No LibTorch here.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fastnn {
struct HParams;
}

namespace fastnn::dist {

/// The most workers a job may have: the coordinator keeps a record of each,
/// and every count read from the environment is checked against it.
inline constexpr int kMaxWorldSize = 1 << 20;

/// Where a job's layout came from (docs/design.md's order; docs/cluster.md).
enum class ClusterSource {
  kSingleProcess,
  kFlags,      // worker_hosts / task_index
  kTfConfig,   // TF_CONFIG
  kTorchrun,   // LOCAL_RANK, RANK, WORLD_SIZE, ...
  kNodeLevel,  // PAI-DLC / Kubeflow: WORLD_SIZE and RANK count nodes
  kSlurm,      // SLURM_PROCID, ...
  kOpenMpi,    // OMPI_COMM_WORLD_RANK, ...
  kLauncher,   // this project's launcher (nproc_per_node), or its workers
};

/// The name --print_cluster and messages use: "single process", "flags",
/// "TF_CONFIG", "torchrun", "PAI-DLC/Kubeflow", "Slurm", "Open MPI",
/// "launcher".
const char* source_name(ClusterSource source);

struct ClusterSpec {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  /// host:port of the chief's gRPC coordinator; empty when world_size == 1.
  std::string coordinator;
  /// Worker hosts when the source lists them (worker_hosts, TF_CONFIG).
  std::vector<std::string> hosts;
  /// Which source decided.
  ClusterSource source = ClusterSource::kSingleProcess;
  /// > 0: nproc_per_node was not set and nothing else started workers, so
  /// this many (one per GPU of this machine) are launched.
  int workers_from_gpus = 0;
  /// For --print_cluster: value -> where it came from, in print order.
  std::vector<std::pair<std::string, std::string>> provenance;
  /// > 0 when this process is a launcher (nproc_per_node > 1 and nothing
  /// started one process per device): it starts this many local workers,
  /// ranks rank .. rank + launch_workers - 1, and does not train itself.
  int launch_workers = 0;
  /// The job's id when every worker runs on this host and the source names
  /// the job (Open MPI on one machine): the workers then share a token
  /// through a file only this user can read (session.h).
  std::string local_job_id;

  bool is_chief() const { return rank == 0; }
  bool distributed() const { return world_size > 1; }
};

/// The environment as a map (tests pass their own; tools pass environ).
using Environment = std::map<std::string, std::string>;
Environment process_environment();

/// Resolves the cluster from the hyperparameters and the environment in
/// docs/design.md's order, once per process. Throws ConfigError (exit 2) on
/// contradictory or malformed values, naming the variable or key.
/// `gpus_per_machine` (asked only when the job would otherwise be one
/// process and nproc_per_node is not set): more than 1 starts one worker
/// per GPU, as torchrun users expect.
ClusterSpec resolve_cluster(const HParams& hp, const Environment& env,
                            const std::function<int()>& gpus_per_machine = {});

/// The text --print_cluster prints: every value and its source.
std::string describe(const ClusterSpec& spec);

/// Set (to "1") by the launcher in its workers' environment: the torchrun
/// variables there were written by this launcher and win over every source.
inline constexpr const char* kLauncherMarker = "FASTNN_LAUNCHER";

/// "host:port" -> {host, port}; "[v6]:port" keeps the brackets off the host.
/// Throws ConfigError naming `what` when the port is missing or not 0-65535.
std::pair<std::string, int> split_host_port(const std::string& address, const std::string& what);

/// Expands a Slurm host list: "node[01-03,7],gpu-a" -> node01 node02 node03
/// node7 gpu-a (zero padding kept). Throws ConfigError naming `what`.
std::vector<std::string> expand_nodelist(const std::string& list, const std::string& what);

}  // namespace fastnn::dist
