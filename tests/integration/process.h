// Runs the project's real binaries as child processes for integration tests.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fastnn::testing {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal when killed
  std::string output;  // stdout and stderr together
};

/// A started child; output goes to `log_path`.
struct Child {
  pid_t pid = -1;
  std::string log_path;
};

Child spawn(const std::vector<std::string>& argv, const std::string& log_path);
/// Waits (up to timeout_s, then SIGKILL) and collects the output.
ProcessResult wait_for(const Child& c, int timeout_s = 300);
/// spawn + wait_for.
ProcessResult run(const std::vector<std::string>& argv, const std::string& log_path,
                  int timeout_s = 300);
/// True while the child has not exited (reaps nothing).
bool running(const Child& c);

/// Where Debian's dataset-fashion-mnist put the idx files, or
/// FASTNN_FMNIST_DIR when set.
std::string fmnist_source();

}  // namespace fastnn::testing
