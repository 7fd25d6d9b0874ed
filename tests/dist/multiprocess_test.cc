// Real worker processes (tests/dist/session_probe.cc) on localhost: a
// SIGKILLed worker or coordinator makes the survivor exit 5 within
// worker_timeout_secs naming it; `fastnn_job stop` ends every worker with 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "src/dist/coordinator.h"
#include "tests/test_files.h"
#include "tests/test_paths.h"

extern char** environ;

namespace fastnn::dist {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

class MultiProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::per_test_dir("multiprocess");
    port_ = pick_free_port();
  }
  void TearDown() override {
    for (pid_t p : pids_) {
      if (p > 0) kill(p, SIGKILL), waitpid(p, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  /// Starts the probe as `rank` of 2; its output goes to rank<R>.log.
  void start(int rank) {
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.push_back(*e);
    for (std::string kv :
         {"RANK=" + std::to_string(rank), std::string("WORLD_SIZE=2"),
          std::string("LOCAL_RANK=") + std::to_string(rank), std::string("LOCAL_WORLD_SIZE=2"),
          std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + std::to_string(port_),
          std::string("FASTNN_JOB_TOKEN=mp-token"), std::string("PROBE_TIMEOUT_SECS=3"),
          std::string("PROBE_WAIT_SECS=30")}) {
      env_s.push_back(kv);
    }
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    const std::string prog = std::string(FASTNN_BIN_DIR) + "/dist_session_probe";
    const std::string log = log_path(rank);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char* argv[] = {const_cast<char*>(prog.c_str()), nullptr};
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, prog.c_str(), &fa, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
    pids_.resize(std::max<size_t>(pids_.size(), rank + 1), -1);
    pids_[rank] = pid;
  }
  std::string log_path(int rank) {
    return (dir_ / ("rank" + std::to_string(rank) + ".log")).string();
  }
  std::string log(int rank) { return testing::slurp(log_path(rank)); }
  void wait_ready() {
    const auto t0 = Clock::now();
    while (Clock::now() - t0 < 15s) {
      if (log(0).find("ready") != std::string::npos && log(1).find("ready") != std::string::npos) {
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "not ready:\n" << log(0) << "\n" << log(1);
  }
  /// Waits (bounded) for `rank` to exit; returns its exit code, -1 on none.
  int wait_exit(int rank, std::chrono::milliseconds limit) {
    const auto t0 = Clock::now();
    while (Clock::now() - t0 < limit) {
      int st = 0;
      if (waitpid(pids_[rank], &st, WNOHANG) == pids_[rank]) {
        pids_[rank] = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }

  fs::path dir_;
  int port_ = 0;
  std::vector<pid_t> pids_;
};

TEST_F(MultiProcessTest, KilledWorkerMakesTheOtherExit5NamingIt) {
  start(0);
  start(1);
  wait_ready();
  std::this_thread::sleep_for(300ms);  // a few steps reported
  kill(pids_[1], SIGKILL);
  const auto t0 = Clock::now();
  EXPECT_EQ(wait_exit(0, 8s), 5) << log(0);
  const auto took = Clock::now() - t0;
  EXPECT_LT(took, 6s) << "worker_timeout_secs is 3";
  EXPECT_NE(log(0).find("worker 1 ("), std::string::npos) << log(0);
  EXPECT_NE(log(0).find("lost at step "), std::string::npos) << log(0);
  EXPECT_NE(log(0).find("no heartbeat for 3 s"), std::string::npos) << log(0);
}

TEST_F(MultiProcessTest, KilledCoordinatorMakesTheOtherExit5) {
  start(0);
  start(1);
  wait_ready();
  kill(pids_[0], SIGKILL);
  EXPECT_EQ(wait_exit(1, 8s), 5) << log(1);
  EXPECT_NE(log(1).find("coordinator 127.0.0.1:" + std::to_string(port_) + " lost"),
            std::string::npos)
      << log(1);
}

TEST_F(MultiProcessTest, FastnnJobStopEndsEveryWorkerWithZero) {
  start(0);
  start(1);
  wait_ready();
  const std::string cmd = "FASTNN_JOB_TOKEN=mp-token " + std::string(FASTNN_BIN_DIR) +
                          "/fastnn_job stop --coordinator 127.0.0.1:" + std::to_string(port_) +
                          " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(wait_exit(1, 8s), 0) << log(1);
  EXPECT_EQ(wait_exit(0, 8s), 0) << log(0);
  EXPECT_NE(log(0).find("rank 0 done"), std::string::npos) << log(0);
}

}  // namespace
}  // namespace fastnn::dist
