// A worker without training, for multi-process tests of the control plane:
// resolves the cluster from the environment (torchrun variables), joins,
// exchanges one key per rank through the store, prints "rank R of W ready",
// then with PROBE_WAIT_SECS=N stays up to N s, reporting step 1, 2, ...:
// exits 0 when a graceful stop is requested, 5 (with the message) when the
// session reports a failure. Exit codes as the trainer's (2, 5).
// PROBE_TIMEOUT_SECS sets worker_timeout_secs (default 10).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/dist/session.h"
#include "src/log/failure.h"

int main() {
  using namespace fastnn;
  try {
    const dist::Environment env = dist::process_environment();
    auto number = [&](const char* key, int fallback) {
      auto it = env.find(key);
      return it == env.end() ? fallback : std::stoi(it->second);
    };
    HParams hp;
    hp.worker_timeout_secs = number("PROBE_TIMEOUT_SECS", 10);
    const dist::ClusterSpec spec = dist::resolve_cluster(hp, env);
    dist::WorkerSession session(spec, dist::session_options(hp, env));
    auto& store = session.store();
    const std::string mine = "value of rank " + std::to_string(spec.rank);
    store.set("probe/" + std::to_string(spec.rank), {mine.begin(), mine.end()});
    for (int r = 0; r < spec.world_size; ++r) {
      const auto v = store.get("probe/" + std::to_string(r));
      if (std::string(v.begin(), v.end()) != "value of rank " + std::to_string(r)) {
        throw DistributedError("store returned the wrong value");
      }
    }
    std::cout << "rank " << spec.rank << " of " << spec.world_size
              << " ready: rendezvous ok, store ok (coordinator " << session.spec().coordinator
              << ")" << std::endl;
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::seconds(number("PROBE_WAIT_SECS", 0));
    for (int64_t step = 1; std::chrono::steady_clock::now() < until; ++step) {
      session.report({step, 1.0, 100.0, 10.0});
      if (auto failure = session.failure()) {
        session.finish(kExitDistributed);
        throw DistributedError(*failure);
      }
      if (session.stop_requested()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    session.finish(kExitOk);
    std::cout << "rank " << spec.rank << " done" << std::endl;
    return kExitOk;
  } catch (...) {
    return report_failure("session_probe", failure_of(std::current_exception()));
  }
}
