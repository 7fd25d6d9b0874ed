// Two workers of one job (Gloo over loopback, one thread each) stepping as
// a GPU run does: the numbers are read only on the steps asked for and on
// the stop agreements (docs/design/gpu.md, "The GPU step").
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fastnn/errors.h"
#include "src/dist/coordinator.h"
#include "src/train/loss.h"
#include "src/train/signals.h"
#include "tests/train/step_rig.h"

namespace fastnn::train {
namespace {

using testing::StepRig;

// Runs body(rig, rank) on two workers; `ready` runs once both rigs exist
// (before either steps). Returns each worker's error text ("" = none).
std::vector<std::string> run_two(const std::function<void(StepRig&, int)>& body,
                                 const std::function<void()>& ready) {
  ::setenv("FASTNN_JOB_TOKEN", "distributed-step-test", 1);
  const int port = dist::pick_free_port();
  std::atomic<int> built{0};
  std::atomic<bool> go{false};
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        testing::StepRigOptions o;
        o.read_every_step = false;
        dist::ClusterSpec spec;
        spec.rank = r;
        spec.world_size = 2;
        spec.coordinator = "127.0.0.1:" + std::to_string(port);
        o.cluster = spec;
        StepRig rig(std::move(o));
        if (++built == 2) {
          ready();
          go = true;
        }
        while (!go) std::this_thread::yield();
        body(rig, r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        go = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

TEST(DistributedStepTest, ReadsOnlyOnStepsAskedForAndOnStopAgreements) {
  torch::set_num_threads(1);
  const int steps = 2 * static_cast<int>(kStopAgreementSteps) + 5;
  const int asked = 12;  // a logging step, not an agreement
  std::vector<std::vector<double>> losses(2);
  int64_t before = 0;
  int64_t after_steps = 0;
  std::atomic<int> done{0};
  auto errors = run_two(
      [&](StepRig& rig, int rank) {
        for (int i = 0; i < steps; ++i) {
          CombinedStep c;
          const StepStats s = rig.run(i, i == asked, &c);
          EXPECT_FALSE(c.stop);
          EXPECT_EQ(s.batch_samples, 2 * StepRig::kBatch);
          if (s.metrics_read) losses[rank].push_back(s.loss);
        }
        if (++done == 2) after_steps = host_reads();
        while (done < 2) std::this_thread::yield();
        EXPECT_TRUE(rig.step->settle().read);  // the last step was not read
      },
      [&] { before = host_reads(); });
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  // Per worker: the asked step and the agreements at steps 10 and 20.
  EXPECT_EQ(after_steps - before, 2 * 3);
  EXPECT_EQ(host_reads() - after_steps, 2);  // settle(), once each
  ASSERT_EQ(losses[0].size(), 3u);
  EXPECT_EQ(losses[0], losses[1]);  // read steps see the same combined loss
}

// A SIGTERM seen by the workers during step 3 stops both after the same
// step: the first agreement (step 10), with exit 143's code.
TEST(DistributedStepTest, ASignalStopsEveryWorkerAtTheNextAgreement) {
  torch::set_num_threads(1);
  install_stop_signals();
  std::vector<int64_t> stopped_at(2, -1);
  std::vector<int> codes(2, -1);
  auto errors = run_two(
      [&](StepRig& rig, int rank) {
        for (int i = 0; i < 3 * static_cast<int>(kStopAgreementSteps); ++i) {
          if (i == 3 && rank == 0) std::raise(SIGTERM);
          CombinedStep c;
          const StepStats s = rig.run(i, false, &c);
          if (c.stop) {
            stopped_at[rank] = s.global_step;
            codes[rank] = c.exit_code;
            break;
          }
        }
      },
      [] {});
  clear_stop_signal();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  EXPECT_EQ(stopped_at[0], kStopAgreementSteps);
  EXPECT_EQ(stopped_at[1], kStopAgreementSteps);
  EXPECT_EQ(codes[0], kExitSigterm);
  EXPECT_EQ(codes[1], kExitSigterm);
}

}  // namespace
}  // namespace fastnn::train
