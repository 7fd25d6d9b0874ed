#include "src/io/thread_limit.h"

#include <pthread.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace fastnn::io {
namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};

extern "C" void* wait_at_gate(void* arg) {
  auto& gate = *static_cast<Gate*>(arg);
  std::unique_lock<std::mutex> lock(gate.mu);
  gate.cv.wait(lock, [&] { return gate.open; });
  return nullptr;
}

/// The process's threads (/proc/self/status), -1 when unknown.
int threads_now() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "Threads:") {
      int n = -1;
      in >> n;
      return n;
    }
  }
  return -1;
}

}  // namespace

int startable_threads(int cap) {
  const int before = threads_now();
  Gate gate;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Small, yet room for the static TLS of the libraries loaded (LibTorch's
  // is large: a 64 KiB stack does not hold it).
  pthread_attr_setstacksize(&attr, 1 << 20);
  const pthread_attr_t* use = &attr;
  std::vector<pthread_t> started;
  while (static_cast<int>(started.size()) < cap) {
    pthread_t thread;
    const int err = pthread_create(&thread, use, wait_at_gate, &gate);
    if (err == EINVAL && use) {
      use = nullptr;  // the stack too small after all: the default one
      continue;
    }
    if (err != 0) break;
    started.push_back(thread);
  }
  pthread_attr_destroy(&attr);
  {
    std::lock_guard<std::mutex> lock(gate.mu);
    gate.open = true;
  }
  gate.cv.notify_all();
  for (pthread_t thread : started) pthread_join(thread, nullptr);
  // A joined thread still counts against the limit until the kernel has
  // released it, a moment after the join returns.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (before > 0 && threads_now() > before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return static_cast<int>(started.size());
}

bool is_thread_limit(const std::system_error& e) {
  return e.code() == std::errc::resource_unavailable_try_again;
}

std::string thread_limit_message(const std::string& what, const std::string& advice) {
  std::string limit = "ulimit -u";
  rlimit rl{};
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    limit += " " + std::to_string(rl.rlim_cur);
  }
  return (what.empty() ? "" : what + ": ") +
         "cannot start a thread: the limit on this user's processes and threads is reached (" +
         limit + ", or the container's pids limit); " + advice;
}

}  // namespace fastnn::io
