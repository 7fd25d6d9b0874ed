#include "tests/integration/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fastnn::testing {

Child spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  Child c;
  c.log_path = log_path;
  c.pid = fork();
  if (c.pid < 0) throw std::runtime_error("fork failed");
  if (c.pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return c;
}

bool running(const Child& c) {
  // waitid, not waitpid: only waitid takes WNOWAIT (leave it to wait_for
  // to reap); si_pid stays 0 while the child has not exited.
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return false;
  }
  return info.si_pid == 0;
}

ProcessResult wait_for(const Child& c, int timeout_s) {
  ProcessResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (true) {
    pid_t done = waitpid(c.pid, &status, WNOHANG);
    if (done == c.pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  std::ifstream in(c.log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

ProcessResult run(const std::vector<std::string>& argv, const std::string& log_path,
                  int timeout_s) {
  return wait_for(spawn(argv, log_path), timeout_s);
}

std::string fmnist_source() {
  const char* env = std::getenv("FASTNN_FMNIST_DIR");
  return env ? env : "/usr/share/datasets/fashion-mnist";
}

}  // namespace fastnn::testing
