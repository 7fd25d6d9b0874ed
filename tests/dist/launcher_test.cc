// The --nproc_per_node launcher with a fake worker (a shell script) instead
// of training: the variables each worker gets, exit codes, stopping the
// others when one fails, and signal forwarding.
#include "src/dist/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/dist/coordinator.h"
#include "tests/test_files.h"

namespace fastnn::dist {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Writes its variables to $OUT/rank<RANK>.env, then behaves as $MODE says
// ($FAIL_RANK is the worker that misbehaves).
// The traps are set before rank<N>.env appears, and the failing rank waits
// for every rank's .env: a signal can never reach a worker that has not
// set its trap yet, however slowly the shells start on a loaded machine.
constexpr char kFakeWorker[] = R"sh(#!/bin/sh
f="$OUT/rank$RANK"
pid=
if [ "$MODE" = stubborn ]; then
  trap '' TERM
else
  trap 'kill $pid 2>/dev/null; echo term > "$f.term"; exit 143' TERM
fi
trap 'kill $pid 2>/dev/null; echo int > "$f.int"; exit 130' INT
echo "RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK" \
  "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR" \
  "MASTER_PORT=$MASTER_PORT TOKEN=$FASTNN_JOB_TOKEN" \
  "LAUNCHER=$FASTNN_LAUNCHER ARGS=$*" > "$f.tmp"
mv "$f.tmp" "$f.env"
if [ "$RANK" = "$FAIL_RANK" ]; then
  i=0
  while [ "$(ls "$OUT" | grep -c '\.env$')" -lt "$WORLD_SIZE" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  sleep 0.3
  case "$MODE" in
    fail|stubborn) exit 3 ;;
    signal) kill -9 $$ ;;
  esac
fi
case "$MODE" in
  ok) exit 0 ;;
  stubborn) exec sleep 30 ;;
esac
sleep 30 &
pid=$!
wait $pid
exit 0
)sh";

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::per_test_dir("launcher");
    script_ = (dir_ / "fake_worker.sh").string();
    std::ofstream(script_) << kFakeWorker;
    chmod(script_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LaunchOptions options(const std::string& mode, int nproc, int fail_rank = -1) {
    LaunchOptions o;
    o.program = script_;
    o.args = {"--config", "x.cfg", "--nproc_per_node=1"};
    o.nproc = nproc;
    o.token = "tok123";
    o.grace = 1000ms;
    o.env = {{"OUT", dir_.string()},
             {"MODE", mode},
             {"FAIL_RANK", std::to_string(fail_rank)},
             {"PATH", "/usr/bin:/bin"}};
    return o;
  }
  std::string read(const std::string& name) { return testing::slurp(dir_ / name); }
  bool exists(const std::string& name) { return fs::exists(dir_ / name); }

  fs::path dir_;
  std::string script_;
};

TEST_F(LauncherTest, EveryWorkerGetsTorchrunVariables) {
  EXPECT_EQ(launch(options("ok", 3)), 0);
  std::string port;
  for (int r = 0; r < 3; ++r) {
    const std::string env = read("rank" + std::to_string(r) + ".env");
    EXPECT_NE(env.find("RANK=" + std::to_string(r) +
                       " WORLD_SIZE=3 "
                       "LOCAL_RANK=" +
                       std::to_string(r) + " LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1"),
              std::string::npos)
        << env;
    EXPECT_NE(env.find("TOKEN=tok123 LAUNCHER=1 ARGS=--config x.cfg "
                       "--nproc_per_node=1"),
              std::string::npos)
        << env;
    const size_t p = env.find("MASTER_PORT=");
    ASSERT_NE(p, std::string::npos);
    const std::string mine = env.substr(p + 12, env.find(' ', p) - p - 12);
    EXPECT_NE(mine, "0");
    if (r == 0) port = mine;
    EXPECT_EQ(mine, port);  // one coordinator port for all
  }
}

TEST_F(LauncherTest, OneFailureStopsTheOthersWithItsCode) {
  const auto t0 = Clock::now();
  EXPECT_EQ(launch(options("fail", 3, 1)), 3);
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_TRUE(exists("rank0.term"));  // stopped with SIGTERM
  EXPECT_TRUE(exists("rank2.term"));
  EXPECT_FALSE(exists("rank1.term"));
}

TEST_F(LauncherTest, WorkersIgnoringSigtermAreKilledAfterTheGrace) {
  const auto t0 = Clock::now();
  EXPECT_EQ(launch(options("stubborn", 2, 1)), 3);
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, 1000ms);  // the grace period
  EXPECT_LT(took, 6s);
}

TEST_F(LauncherTest, WorkerKilledBySignalGivesExitCode5) {
  EXPECT_EQ(launch(options("signal", 2, 0)), kExitDistributed);
  EXPECT_TRUE(exists("rank1.term"));
}

TEST_F(LauncherTest, SignalsAreForwardedToEveryWorker) {
  for (const int sig : {SIGTERM, SIGINT}) {
    for (int r = 0; r < 2; ++r) {
      fs::remove(dir_ / ("rank" + std::to_string(r) + ".env"));
    }
    auto result = std::async(std::launch::async, [&] { return launch(options("wait", 2)); });
    const auto t0 = Clock::now();
    while (!(exists("rank0.env") && exists("rank1.env")) && Clock::now() - t0 < 10s) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(exists("rank1.env"));
    kill(getpid(), sig);
    ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
    const std::string mark = sig == SIGTERM ? ".term" : ".int";
    EXPECT_EQ(result.get(), sig == SIGTERM ? kExitSigterm : kExitSigint);
    EXPECT_TRUE(exists("rank0" + mark));
    EXPECT_TRUE(exists("rank1" + mark));
  }
}

TEST(LauncherArgsTest, NprocPerNodeIsForcedToOne) {
  const char* argv[] = {"train",          "--config",          "a.cfg", "--nproc_per_node", "4",
                        "--batch_size=8", "--nproc_per_node=2"};
  EXPECT_EQ(worker_args(7, argv), (std::vector<std::string>{"--config", "a.cfg", "--batch_size=8",
                                                            "--nproc_per_node=1"}));
}

TEST(LauncherArgsTest, TokenAndPortForALocalJob) {
  HParams hp;
  hp.nproc_per_node = 2;
  hp.sources["nproc_per_node"] = "command line";
  const char* argv[] = {"train", "--nproc_per_node=2"};
  ClusterSpec spec = resolve_cluster(hp, {});
  LaunchOptions o = launch_options(spec, hp, {}, 2, argv);
  EXPECT_EQ(o.nproc, 2);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(listen_host_for(o.master_addr), "127.0.0.1");  // loopback only
  EXPECT_EQ(o.master_port, 0);                             // picked at launch
  EXPECT_EQ(o.token.size(), 32u);                          // random, 128 bits in hex
  EXPECT_NE(o.token, launch_options(spec, hp, {}, 2, argv).token);
  // A token from the environment is passed on untouched.
  EXPECT_TRUE(launch_options(spec, hp, {{"FASTNN_JOB_TOKEN", "t"}}, 2, argv).token.empty());
}

TEST(LauncherArgsTest, MultiNodeJobNeedsASharedToken) {
  HParams hp;
  const Environment env = {{"MASTER_ADDR", "m"},
                           {"MASTER_PORT", "23456"},
                           {"WORLD_SIZE", "2"},
                           {"RANK", "1"},
                           {"NPROC_PER_NODE", "2"}};
  ClusterSpec spec = resolve_cluster(hp, env);
  const char* argv[] = {"train"};
  EXPECT_THROW(launch_options(spec, hp, env, 1, argv), ConfigError);
  Environment with = env;
  with["FASTNN_JOB_TOKEN"] = "shared";
  LaunchOptions o = launch_options(spec, hp, with, 1, argv);
  EXPECT_EQ(o.first_rank, 2);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.master_addr, "m");
  EXPECT_EQ(o.master_port, 23456);
  EXPECT_EQ(listen_host_for(o.master_addr), "0.0.0.0");  // every interface
}

// What the chief started by the launcher resolves from the variables the
// launcher sets: a loopback coordinator, so it listens on 127.0.0.1 only.
// A job listed across machines keeps listening on every interface.
TEST(LauncherArgsTest, OneMachineChiefListensOnLoopbackOnly) {
  HParams hp;
  hp.nproc_per_node = 2;
  hp.sources["nproc_per_node"] = "command line";
  const char* argv[] = {"train", "--nproc_per_node=2"};
  const LaunchOptions o = launch_options(resolve_cluster(hp, {}), hp, {}, 2, argv);
  const Environment chief_env = {{"RANK", "0"},
                                 {"WORLD_SIZE", "2"},
                                 {"LOCAL_RANK", "0"},
                                 {"LOCAL_WORLD_SIZE", "2"},
                                 {"MASTER_ADDR", o.master_addr},
                                 {"MASTER_PORT", "41234"},
                                 {kLauncherMarker, "1"}};
  HParams worker;  // --nproc_per_node=1, as worker_args() passes it
  const ClusterSpec chief = resolve_cluster(worker, chief_env);
  ASSERT_TRUE(chief.is_chief() && chief.distributed());
  EXPECT_EQ(chief.coordinator, "127.0.0.1:41234");
  EXPECT_EQ(listen_host_for(split_host_port(chief.coordinator, "c").first), "127.0.0.1");

  HParams multi;
  multi.worker_hosts = "10.0.0.1:2222,10.0.0.2:2222";
  multi.sources["worker_hosts"] = "command line";
  const ClusterSpec listed = resolve_cluster(multi, {});
  ASSERT_TRUE(listed.is_chief() && listed.distributed());
  EXPECT_EQ(listen_host_for(split_host_port(listed.coordinator, "c").first), "0.0.0.0");
}

}  // namespace
}  // namespace fastnn::dist
