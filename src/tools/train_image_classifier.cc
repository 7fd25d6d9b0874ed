// train_image_classifier --config FILE [--KEY=VALUE ...]
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/trainer.h"
#include "src/dist/cluster.h"
#include "src/dist/launcher.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "src/train/run_hooks.h"

namespace {

namespace dist = fastnn::dist;

// The cluster, resolved once. One process on a machine with several GPUs,
// nproc_per_node not given: one worker per GPU, as torchrun users expect
// (the GPUs are counted only then).
dist::ClusterSpec resolve(fastnn::LoadResult& args, const dist::Environment& env) {
  const dist::ClusterSpec cluster = dist::resolve_cluster(args.hp, env, [&args] {
    return fastnn::train::default_workers_per_machine(fastnn::train::device_options(args.hp));
  });
  if (const int gpus = cluster.workers_from_gpus) {
    std::cerr << "train_image_classifier: " << gpus
              << " GPUs: starting one worker per GPU (nproc_per_node=" << gpus
              << "; set nproc_per_node=1 or device=cpu for one process)\n";
    args.hp.nproc_per_node = gpus;
  }
  return cluster;
}

// Trains; result_format's line also for a run that fails before training
// (a bad dataset, a lost peer): UNSAT, with the exit code it gets.
int train(const fastnn::LoadResult& args, const dist::ClusterSpec& cluster,
          const dist::Environment& env) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    fastnn::train::Trainer trainer(args.hp, cluster, env);
    return trainer.run();
  } catch (...) {
    fastnn::train::RunResult unsat;
    unsat.exit_code = fastnn::train::tool_failure_of(std::current_exception()).exit_code;
    unsat.wall_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsat.seed = args.hp.seed;
    unsat.train_loss = std::nan("");
    if (cluster.rank == 0) fastnn::train::print_result(args.hp, unsat);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  return fastnn::train::tool_main(
      argc, argv, "train_image_classifier", "--config FILE [--KEY=VALUE ...] [--dry_run]",
      [argc, argv](fastnn::LoadResult& args) {
        const dist::Environment env = dist::process_environment();
        const dist::ClusterSpec cluster = resolve(args, env);
        if (args.print_cluster) {
          std::cout << dist::describe(cluster);
          return 0;
        }
        if (cluster.launch_workers > 0 && !args.dry_run) {
          return dist::launch(dist::launch_options(cluster, args.hp, env, argc, argv));
        }
        if (args.dry_run) {
          fastnn::train::Trainer trainer(args.hp, cluster, env);
          std::cout << trainer.describe();
          return 0;
        }
        return train(args, cluster, env);
      });
}
