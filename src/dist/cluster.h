// Where this process sits in the job: rank, world size, local rank, the
// coordinator's address, and where each value came from (DESIGN.md §1).
// No LibTorch here.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fastnn {
struct HParams;
}

namespace fastnn::dist {

struct ClusterSpec {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  /// host:port of the chief's gRPC coordinator; empty when world_size == 1.
  std::string coordinator;
  /// Worker hosts when the source lists them (worker_hosts, TF_CONFIG).
  std::vector<std::string> hosts;
  /// Which source decided: "single process", "flags", "TF_CONFIG",
  /// "torchrun", "PAI-DLC/Kubeflow", "Slurm", "Open MPI", "launcher".
  std::string source = "single process";
  /// For --print_cluster: value -> where it came from, in print order.
  std::vector<std::pair<std::string, std::string>> provenance;

  bool is_chief() const { return rank == 0; }
  bool distributed() const { return world_size > 1; }
};

/// The environment as a map (tests pass their own; tools pass environ).
using Environment = std::map<std::string, std::string>;
Environment process_environment();

/// Resolves the cluster from the hyperparameters and the environment in
/// DESIGN.md §1's order. Throws ConfigError (exit 2) on contradictory or
/// malformed values, naming the variable or key.
ClusterSpec resolve_cluster(const HParams& hp, const Environment& env);

/// The text --print_cluster prints: every value and its source.
std::string describe(const ClusterSpec& spec);

}  // namespace fastnn::dist
