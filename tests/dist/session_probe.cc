// A worker without training, for multi-process tests of the control plane:
// resolves the cluster from the environment (torchrun variables), joins,
// exchanges one key per rank through the store, reports, finishes.
// Prints "rank R of W: rendezvous ok, store ok"; exits like the trainer
// (2 configuration, 5 distributed failure).
#include <iostream>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/dist/session.h"

int main() {
  using namespace fastnn;
  try {
    HParams hp;
    hp.worker_timeout_secs = 10;
    const dist::Environment env = dist::process_environment();
    const dist::ClusterSpec spec = dist::resolve_cluster(hp, env);
    dist::WorkerSession session(spec, dist::session_options(hp, env));
    auto& store = session.store();
    const std::string mine = "host of rank " + std::to_string(spec.rank);
    store.set("probe/" + std::to_string(spec.rank), {mine.begin(), mine.end()});
    for (int r = 0; r < spec.world_size; ++r) {
      const auto v = store.get("probe/" + std::to_string(r));
      if (std::string(v.begin(), v.end()) !=
          "host of rank " + std::to_string(r)) {
        throw DistributedError("store returned the wrong value");
      }
    }
    session.report({1, 0.0, 0.0, 0.0});
    session.finish(0);
    std::cout << "rank " << spec.rank << " of " << spec.world_size
              << ": rendezvous ok, store ok (coordinator "
              << session.spec().coordinator << ")\n";
    return kExitOk;
  } catch (const ConfigError& e) {
    std::cerr << "session_probe: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const DistributedError& e) {
    std::cerr << "session_probe: distributed failure: " << e.what() << "\n";
    return kExitDistributed;
  }
}
