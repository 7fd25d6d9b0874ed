#include "src/dist/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/dist/coordinator.h"
#include "src/dist/session.h"

namespace fastnn::dist {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_signal_count = 0;

void on_signal(int sig) {
  g_signal = sig;
  g_signal_count = g_signal_count + 1;
}

struct Child {
  pid_t pid = -1;
  int rank = 0;
  bool alive = false;
};

void signal_all(std::vector<Child>& children, int sig) {
  for (const Child& c : children) {
    if (c.alive) kill(c.pid, sig);
  }
}

/// Starts one worker; everything it needs is built before fork().
pid_t spawn(const std::string& program, const std::vector<std::string>& args,
            const Environment& env) {
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& s : argv_s) argv.push_back(s.data());
  for (auto& s : env_s) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    throw DistributedError(std::string("launcher: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // A worker must not outlive a launcher that was SIGKILLed.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(kExitDistributed);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(program.c_str(), argv.data(), envp.data());
    const char msg[] = "launcher: cannot execute the worker program\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  return pid;
}

/// SIGINT's and SIGTERM's handlers from before launch() replaced them.
struct SavedHandlers {
  struct sigaction on_int {};
  struct sigaction on_term {};
};

/// Routes SIGINT and SIGTERM to on_signal(), saving their handlers.
void catch_signals(SavedHandlers& saved) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  g_signal = 0;
  g_signal_count = 0;
  sigaction(SIGINT, &sa, &saved.on_int);
  sigaction(SIGTERM, &sa, &saved.on_term);
}

void restore_signals(const SavedHandlers& saved) {
  sigaction(SIGINT, &saved.on_int, nullptr);
  sigaction(SIGTERM, &saved.on_term, nullptr);
}

/// Local worker `i`'s environment: the job's, plus its rank, the world and
/// the coordinator.
Environment worker_env(const LaunchOptions& options, int i, int world, int port) {
  Environment env = options.env;
  env["RANK"] = std::to_string(options.first_rank + i);
  env["WORLD_SIZE"] = std::to_string(world);
  env["LOCAL_RANK"] = std::to_string(i);
  env["LOCAL_WORLD_SIZE"] = std::to_string(options.nproc);
  env["MASTER_ADDR"] = options.master_addr;
  env["MASTER_PORT"] = std::to_string(port);
  env[kLauncherMarker] = "1";
  if (!options.token.empty()) env["FASTNN_JOB_TOKEN"] = options.token;
  return env;
}

/// Starts every worker. When one cannot be started: kills and reaps those
/// already running, restores the signal handlers, and rethrows.
void spawn_workers(const LaunchOptions& options, int world, int port, std::vector<Child>& children,
                   const SavedHandlers& saved) {
  try {
    for (int i = 0; i < options.nproc; ++i) {
      const Environment env = worker_env(options, i, world, port);
      children[i].rank = options.first_rank + i;
      children[i].pid = spawn(options.program, options.args, env);
      children[i].alive = true;
    }
  } catch (...) {
    signal_all(children, SIGKILL);
    for (Child& child : children) {
      if (child.alive) waitpid(child.pid, nullptr, 0);
    }
    restore_signals(saved);
    throw;
  }
}

/// Watches the started workers until every one has exited: forwards the
/// launcher's signals, and when one fails stops the others (SIGTERM, then
/// SIGKILL after the grace period).
class Supervisor {
 public:
  Supervisor(std::vector<Child>& children, std::chrono::milliseconds grace)
      : children_(children), grace_(grace) {}

  /// Returns the launcher's exit code: the first failing worker's, else 0.
  int run() {
    for (;;) {
      forward_signals();
      if (!reap()) break;
      kill_after_grace();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return result_;
  }

 private:
  /// Passes a new signal on to the workers; a second one kills them.
  void forward_signals() {
    if (g_signal_count == seen_signals_) return;
    seen_signals_ = g_signal_count;
    if (seen_signals_ >= 2) {
      std::cerr << "launcher: second signal, killing the workers\n";
      signal_all(children_, SIGKILL);
    } else {
      signal_all(children_, g_signal);
    }
    forwarded_ = true;
  }

  /// Collects the workers that have exited; whether any is still running.
  bool reap() {
    bool any_alive = false;
    for (Child& child : children_) {
      if (!child.alive) continue;
      int status = 0;
      const pid_t waited = waitpid(child.pid, &status, WNOHANG);
      if (waited == 0) {
        any_alive = true;
        continue;
      }
      child.alive = false;
      record_exit(child, waited, status);
    }
    return any_alive;
  }

  /// Records how `child` ended; the first failure stops the other workers
  /// unless a forwarded signal is already stopping them.
  void record_exit(const Child& child, pid_t waited, int status) {
    int code = kExitDistributed;
    std::string how;
    if (waited > 0 && WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      how = "exited with code " + std::to_string(code);
    } else if (waited > 0 && WIFSIGNALED(status)) {
      how = std::string("was killed by signal ") + std::to_string(WTERMSIG(status));
    } else {
      how = "was lost (waitpid failed)";
    }
    if (code == 0 || failed_) return;
    failed_ = true;
    result_ = code;
    std::cerr << "launcher: worker rank " << child.rank << " (pid " << child.pid << ") " << how
              << (forwarded_ ? "" : "; stopping the other workers") << "\n";
    if (!forwarded_) {
      signal_all(children_, SIGTERM);
      kill_at_ = Clock::now() + grace_;
      kill_armed_ = true;
    }
  }

  /// SIGKILL to the workers left once the grace period after a failure ends.
  void kill_after_grace() {
    if (!kill_armed_ || killed_ || Clock::now() < kill_at_) return;
    std::cerr << "launcher: workers still running after the grace period, "
                 "killing them\n";
    signal_all(children_, SIGKILL);
    killed_ = true;
  }

  std::vector<Child>& children_;
  const std::chrono::milliseconds grace_;
  int result_ = 0;
  int seen_signals_ = 0;
  bool failed_ = false, forwarded_ = false, kill_armed_ = false, killed_ = false;
  Clock::time_point kill_at_;
};

}  // namespace

std::vector<std::string> worker_args(int argc, const char* const* argv) {
  std::vector<std::string> out;
  const std::string key = "--nproc_per_node";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind(key + "=", 0) == 0) continue;
    if (a == key) {
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) ++i;
      continue;
    }
    out.push_back(a);
  }
  out.push_back(key + "=1");
  return out;
}

LaunchOptions launch_options(const ClusterSpec& spec, const HParams& hp, const Environment& env,
                             int argc, const char* const* argv) {
  LaunchOptions o;
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  o.program = n > 0 ? std::string(self, n) : std::string(argv[0]);
  o.args = worker_args(argc, argv);
  o.nproc = spec.launch_workers;
  o.first_rank = spec.rank;
  o.world_size = spec.world_size;
  auto [host, port] = split_host_port(spec.coordinator, "coordinator");
  o.master_addr = host;
  o.master_port = port;
  o.env = env;
  const bool env_token = env.count("FASTNN_JOB_TOKEN") && !env.at("FASTNN_JOB_TOKEN").empty();
  if (hp.job_token_file.empty() && !env_token) {
    if (spec.world_size != spec.launch_workers) {
      throw ConfigError(
          "a job across several machines needs one shared token: set "
          "FASTNN_JOB_TOKEN or job_token_file on every node");
    }
    o.token = make_job_token();
  }
  return o;
}

int launch(const LaunchOptions& options) {
  if (options.nproc < 1) throw ConfigError("launcher: nproc must be >= 1");
  const int world = options.world_size > 0 ? options.world_size : options.nproc;
  const int port = options.master_port > 0 ? options.master_port : pick_free_port();
  SavedHandlers saved;
  catch_signals(saved);
  std::vector<Child> children(options.nproc);
  spawn_workers(options, world, port, children, saved);
  std::cerr << "launcher: started " << options.nproc << " workers (ranks " << options.first_rank
            << ".." << options.first_rank + options.nproc - 1 << " of " << world
            << "), coordinator " << options.master_addr << ":" << port << "\n";
  const int result = Supervisor(children, options.grace).run();
  restore_signals(saved);
  return result;
}

}  // namespace fastnn::dist
