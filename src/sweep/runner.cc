#include "src/sweep/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"
#include "src/io/dir_lock.h"
#include "src/sweep/checks.h"
#include "src/sweep/report.h"

namespace fastnn::sweep {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string args_text(const Assignment& a) {
  std::string s;
  for (const auto& [k, v] : a) s += k + "=" + v + "\n";
  return s;
}

// A trial of an earlier, killed sweep may still be saving its checkpoint
// (it got SIGTERM when the sweep died): wait for its train_dir lock, as the
// trainer would refuse a second process on the same directory.
void wait_until_unlocked(const fs::path& lock_file, std::chrono::seconds limit) {
  const int fd = open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const auto deadline = Clock::now() + limit;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  close(fd);  // releases it
}

// out_dir/.lock, held while the sweep runs.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir) : fd_(io::lock_directory(dir, "--out", "sweep")) {}
  ~DirectoryLock() { close(fd_); }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

struct Running {
  int index;
  pid_t pid;
  Clock::time_point start;
  /// The rung's budget (stop_at_step), 0 for the trial's own end.
  int64_t steps = 0;
  /// The sweep's signals passed on to it so far.
  int forwarded = 0;
};

}  // namespace

std::vector<std::string> trial_command(const SweepOptions& o, const Assignment& params,
                                       const std::string& trial_dir) {
  const fs::path dir(trial_dir);
  std::vector<std::string> argv = {o.trainer};
  if (!o.base_config.empty()) argv.push_back("--config=" + o.base_config);
  const int threads = std::max(1, o.cores / std::max(1, o.parallel));
  // The sweep's share of the cores, unless the trial or the user chose.
  auto given = [&](const std::string& key) {
    if (params.count(key)) return true;
    for (const auto& a : o.extra_args) {
      if (a.rfind("--" + key + "=", 0) == 0) return true;
    }
    return false;
  };
  for (const char* key : {"intra_op_parallelism_threads", "num_preprocessing_threads"}) {
    if (!given(key)) argv.push_back(std::string("--") + key + "=" + std::to_string(threads));
  }
  // Validation and test evaluated at the end, and the result in the log;
  // the trial's own arguments may say otherwise.
  argv.push_back("--result_format=tsv");
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  for (const auto& [k, v] : params) argv.push_back("--" + k + "=" + v);
  argv.push_back("--train_dir=" + (dir / "train").string());
  return argv;
}

namespace {

// Every {cmd} of the launcher template replaced by `cmd`; without one, `cmd`
// goes at the end.
std::string launcher_line(const std::string& launcher, const std::string& cmd) {
  static const std::string kCmd = "{cmd}";
  std::string line;
  size_t from = 0;
  for (size_t at; (at = launcher.find(kCmd, from)) != std::string::npos; from = at + kCmd.size()) {
    line += launcher.substr(from, at - from) + cmd;
  }
  if (from == 0) return launcher + " " + cmd;
  return line + launcher.substr(from);
}

pid_t start_trial(const SweepOptions& options, const std::vector<std::string>& argv,
                  const fs::path& log) {
  std::string line;
  if (!options.launcher.empty()) {
    std::string cmd;
    for (const auto& arg : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(arg);
    line = launcher_line(options.launcher, cmd);
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0)
    throw std::system_error(errno, std::generic_category(), "cannot start a trial: fork");
  if (pid == 0) {
    // The trial goes when the sweep goes (a killed sweep leaves no orphan
    // writing into its directory); its output goes to the trial's log.
    // A process group of its own: Ctrl-C in a terminal (SIGINT to the
    // foreground group) reaches the sweep alone, which passes it on once; a
    // second signal would stop the trainer at once, without its checkpoint.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(kExitSigterm);  // the sweep died before prctl
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      close(null_fd);
    }
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    if (!options.launcher.empty()) {
      execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    } else {
      std::vector<char*> raw;
      for (const auto& arg : argv) raw.push_back(const_cast<char*>(arg.c_str()));
      raw.push_back(nullptr);
      execv(raw[0], raw.data());
    }
    std::fprintf(stderr, "sweep: cannot start %s\n", argv[0].c_str());
    _exit(127);
  }
  setpgid(pid, pid);  // (also here: no signal may find it in the sweep's group)
  return pid;
}

// Reads the trial's metrics.json and decides its status.
TrialResult collect(const SweepOptions& options, int index, const Assignment& params,
                    const fs::path& dir, int exit_code, double wall) {
  TrialResult result;
  result.index = index;
  result.params = params;
  result.dir = (dir / "train").string();
  result.exit_code = exit_code;
  result.wall_secs = wall;
  nlohmann::json metrics;
  try {
    metrics = nlohmann::json::parse(slurp(dir / "train" / "metrics.json"));
  } catch (const std::exception&) {
    metrics = nlohmann::json::object();
  }
  if (metrics.contains("final_step") && metrics["final_step"].is_number()) {
    result.final_step = metrics["final_step"].get<int64_t>();
  }
  if (metrics.contains("wall_secs") && metrics["wall_secs"].is_number() && wall <= 0) {
    result.wall_secs = metrics["wall_secs"].get<double>();
  }
  for (const auto& field : reported_fields()) {
    if (metrics.contains(field) && metrics[field].is_number())
      result.reported[field] = metrics[field].get<double>();
  }
  if (exit_code == kExitDiverged) {
    result.status = "diverged";
  } else if (exit_code != 0) {
    result.status = "failed";
  } else if (metrics.contains(options.metric) && metrics[options.metric].is_number() &&
             std::isfinite(metrics[options.metric].get<double>())) {
    result.status = "ok";
    result.metric = metrics[options.metric].get<double>();
    result.has_metric = true;
  } else {
    result.status = "no_metric";
  }
  return result;
}

nlohmann::json to_json(const TrialResult& r, const std::string& metric) {
  nlohmann::json j = {{"status", r.status},
                      {"exit_code", r.exit_code},
                      {"metric", metric},
                      {"final_step", r.final_step},
                      {"wall_secs", r.wall_secs}};
  if (r.has_metric) j["value"] = r.metric;
  if (!r.reported.empty()) j["reported"] = r.reported;
  return j;
}

std::optional<TrialResult> load_result(const fs::path& file, int index, const Assignment& params,
                                       const std::string& metric) {
  const fs::path dir = file.parent_path();
  if (!fs::exists(file)) return std::nullopt;
  TrialResult result;
  result.index = index;
  result.params = params;
  result.dir = (dir / "train").string();
  try {
    const nlohmann::json saved = nlohmann::json::parse(slurp(file));
    result.status = saved.value("status", "failed");
    result.exit_code = saved.value("exit_code", 0);
    result.final_step = saved.value("final_step", int64_t{0});
    result.wall_secs = saved.value("wall_secs", 0.0);
    if (saved.contains("reported") && saved["reported"].is_object()) {
      for (const auto& [key, value] : saved["reported"].items()) {
        if (value.is_number()) result.reported[key] = value.get<double>();
      }
    }
    if (saved.contains("value") && saved.value("metric", "") == metric) {
      result.metric = saved["value"].get<double>();
      result.has_metric = true;
    } else if (result.status == "ok") {
      result.status = "no_metric";
    }
  } catch (const std::exception&) {
    return std::nullopt;  // torn by a crash, or not ours: run the trial again
  }
  if (result.exit_code == kExitStoppedUnsaved || result.exit_code == kExitSigint ||
      result.exit_code == kExitSigterm) {
    return std::nullopt;  // an older sweep recorded a stop as a result: resume it
  }
  return result;
}

bool better(const TrialResult& a, const TrialResult& b) {
  if (a.has_metric != b.has_metric) return a.has_metric;
  if (a.has_metric && a.metric != b.metric) return a.metric > b.metric;
  return a.index < b.index;
}

}  // namespace

std::string trial_name(int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "trial-%03d", index);
  return buf;
}

namespace {

// result.json for a plain sweep; result-<steps>.json for a rung.
std::string result_file(int64_t steps) {
  return steps > 0 ? "result-" + std::to_string(steps) + ".json" : "result.json";
}

// Starts trial i to `steps` (0: its own end); a promoted trial resumes from
// its own checkpoint in train/.
Running launch(const SweepOptions& o, const std::vector<Assignment>& trials, int i, int64_t steps) {
  const fs::path dir = fs::path(o.out_dir) / trial_name(i);
  fs::create_directories(dir);
  io::write_file_atomic((dir / "trial.args").string(), args_text(trials[i]));
  wait_until_unlocked(dir / "train" / ".lock", std::chrono::seconds(120));
  auto argv = trial_command(o, trials[i], dir.string());
  if (steps > 0) argv.push_back("--stop_at_step=" + std::to_string(steps));
  return {i, start_trial(o, argv, dir / "log.txt"), Clock::now(), steps};
}

// True when a trial's end is a stop by a signal, not a result: the
// trainer's exits 130/143 (checkpoint saved) and 6 (stopped at once by a
// second signal), SIGINT/SIGTERM themselves, and any signal's end while the
// sweep is interrupted. It resumes from its checkpoint next time.
bool stopped_by_signal(int status, bool interrupted) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return interrupted || sig == SIGINT || sig == SIGTERM;
  }
  const int code = WEXITSTATUS(status);
  return code == kExitStoppedUnsaved || code == kExitSigint || code == kExitSigterm ||
         (interrupted && code > 128);
}

// Passes each signal the sweep received on to every running trial, once:
// to the trainer itself (a trainer that launches local workers passes it
// on to them), or, with a launcher, to the trial's process group (the
// shell, the launcher, a local trainer).
void forward_signals(std::vector<Running>& running, const SweepOptions& o,
                     const Interruption& interruption) {
  const int received = interruption.count.load();
  const int sig = interruption.signal.load();
  for (auto& r : running) {
    for (; r.forwarded < received; ++r.forwarded) kill(o.launcher.empty() ? r.pid : -r.pid, sig);
  }
}

// A trial that ended.
struct Ended {
  Running run;
  int exit_code = 0;
  double wall = 0;
  /// Stopped by a signal: no result (stopped_by_signal).
  bool stopped = false;
};

// Waits up to 50 ms for a child of `running`; on its end removes it and
// returns how it ended, or nullopt when none ended yet.
std::optional<Ended> reap(std::vector<Running>& running, const Interruption& interruption) {
  int status = 0;
  const pid_t pid = waitpid(-1, &status, WNOHANG);
  if (pid <= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::nullopt;
  }
  auto it = std::find_if(running.begin(), running.end(),
                         [pid](const Running& r) { return r.pid == pid; });
  if (it == running.end()) return std::nullopt;
  Ended e;
  e.run = *it;
  e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  e.wall = std::chrono::duration<double>(Clock::now() - it->start).count();
  e.stopped = stopped_by_signal(status, interruption.signal.load() != 0);
  running.erase(it);
  return e;
}

// Counts a trial stopped by a signal and says so.
void note_stop(const SweepOptions& o, const Ended& e, SweepOutcome& outcome) {
  ++outcome.stopped;
  if (e.exit_code == kExitSigint) outcome.stop_code = kExitSigint;
  if (o.progress) {
    std::cerr << "sweep: " << trial_name(e.run.index) << " stopped by a signal (exit "
              << e.exit_code << "): no result; it resumes from its checkpoint when the "
              << "sweep runs again\n";
  }
}

// Passes the sweep's signals on to its trials, then waits up to 50 ms for
// one to end. A trial a signal stopped is counted (note_stop) and not
// returned: it has no result to record.
std::optional<Ended> next_ended(std::vector<Running>& running, const SweepOptions& options,
                                const Interruption& interruption, SweepOutcome& outcome) {
  forward_signals(running, options, interruption);
  auto ended = reap(running, interruption);
  if (!ended || !ended->stopped) return ended;
  note_stop(options, *ended, outcome);
  return std::nullopt;
}

// The result of a trial that ended, written to its result file.
TrialResult record(const SweepOptions& o, const std::vector<Assignment>& trials,
                   const Running& done, int code, double wall) {
  const fs::path dir = fs::path(o.out_dir) / trial_name(done.index);
  TrialResult r = collect(o, done.index, trials[done.index], dir, code, wall);
  io::write_file_atomic((dir / result_file(done.steps)).string(),
                        to_json(r, o.metric).dump(2) + "\n");
  return r;
}

// Runs `members` (trial indices) to `steps` (0: the trial's own end), N at
// a time; trials with a result for this rung are not run again. Returns
// the rung's results by trial index.
std::map<int, TrialResult> run_rung(const SweepOptions& options,
                                    const std::vector<Assignment>& trials,
                                    const std::vector<int>& members, int64_t steps,
                                    const Interruption& interruption, SweepOutcome& outcome) {
  auto interrupted = [&] { return interruption.signal.load() != 0; };
  std::map<int, TrialResult> results;
  std::deque<int> todo;
  for (int member : members) {
    const fs::path dir = fs::path(options.out_dir) / trial_name(member);
    auto loaded = load_result(dir / result_file(steps), member, trials[member], options.metric);
    if (loaded) {
      results[member] = *loaded;
    } else {
      todo.push_back(member);
    }
  }
  if (options.progress) {
    std::cerr << "sweep: " << (steps > 0 ? "rung of " + std::to_string(steps) + " steps: " : "")
              << members.size() << " trials, " << members.size() - todo.size() << " done earlier, "
              << todo.size() << " to run, " << options.parallel << " at a time\n";
  }
  std::vector<Running> running;
  int failed = 0;
  double wall_this_run = 0;
  int finished_this_run = 0;
  auto report = [&](const TrialResult& result) {
    if (!options.progress) return;
    const TrialResult* best = nullptr;
    for (const auto& [index, candidate] : results) {
      if (candidate.has_metric && (!best || better(candidate, *best))) best = &candidate;
    }
    std::cerr << "sweep: " << trial_name(result.index) << " " << result.status;
    if (result.has_metric) std::cerr << " " << options.metric << "=" << format_real(result.metric);
    std::cerr << " | " << results.size() << "/" << members.size() << " done, " << running.size()
              << " running, " << failed << " failed";
    if (best) {
      std::cerr << " | best " << format_real(best->metric) << " (" << trial_name(best->index)
                << ")";
    }
    const size_t left = members.size() - results.size();
    if (left > 0 && finished_this_run > 0) {
      const double eta = wall_this_run / finished_this_run *
                         std::ceil(static_cast<double>(left) / options.parallel);
      std::cerr << " | ETA " << static_cast<long long>(eta) << " s";
    }
    std::cerr << "\n";
  };
  while ((!todo.empty() && !interrupted()) || !running.empty()) {
    while (!interrupted() && !todo.empty() && static_cast<int>(running.size()) < options.parallel) {
      running.push_back(launch(options, trials, todo.front(), steps));
      todo.pop_front();
    }
    const auto ended = next_ended(running, options, interruption, outcome);
    if (!ended) continue;
    TrialResult result = record(options, trials, ended->run, ended->exit_code, ended->wall);
    if (result.status != "ok") ++failed;
    wall_this_run += ended->wall;
    ++finished_this_run;
    results[ended->run.index] = result;
    report(result);
  }
  return results;
}

// ASHA (Li et al., "A System for Massively Parallel Hyperparameter
// Tuning"): no rung waits for another. Whenever a slot is free, the
// highest rung with a promotable trial - one among the best floor(n/eta)
// of the n results of its rung, not yet started at the next rung - sends
// it on (resuming its checkpoint); otherwise the next untried trial starts
// at the first rung. The sweep ends when nothing can start and nothing
// runs. Results on disk (result-<steps>.json) are the state: a rerun
// recomputes the same promotions and runs only what is missing.
std::map<int, TrialResult> run_asha(const SweepOptions& options,
                                    const std::vector<Assignment>& trials,
                                    const std::vector<int64_t>& rungs,
                                    const Interruption& interruption, SweepOutcome& outcome) {
  auto interrupted = [&] { return interruption.signal.load() != 0; };
  const size_t trial_count = trials.size();
  // results[k][i]: trial i's result at rung k; started[k]: begun at rung k.
  std::vector<std::map<int, TrialResult>> results(rungs.size());
  std::vector<std::set<int>> started(rungs.size());
  int earlier = 0;
  for (size_t k = 0; k < rungs.size(); ++k) {
    for (size_t i = 0; i < trial_count; ++i) {
      const fs::path dir = fs::path(options.out_dir) / trial_name(static_cast<int>(i));
      if (auto loaded = load_result(dir / result_file(rungs[k]), static_cast<int>(i), trials[i],
                                    options.metric)) {
        results[k][static_cast<int>(i)] = *loaded;
        started[k].insert(static_cast<int>(i));
        ++earlier;
      }
    }
  }
  if (options.progress) {
    std::cerr << "sweep: asynchronous successive halving over " << trial_count
              << " trials, rungs of";
    for (int64_t steps : rungs) std::cerr << " " << steps;
    std::cerr << " steps; " << earlier << " rung results earlier, " << options.parallel
              << " at a time\n";
  }
  // The next (trial, rung) to start, if any.
  auto next_job = [&]() -> std::optional<std::pair<int, size_t>> {
    for (size_t k = rungs.size() - 1; k-- > 0;) {
      std::vector<TrialResult> ranked;
      for (const auto& [index, result] : results[k]) {
        if (result.has_metric) ranked.push_back(result);
      }
      std::sort(ranked.begin(), ranked.end(), better);
      const size_t quota = results[k].size() / static_cast<size_t>(options.halving.eta);
      for (size_t j = 0; j < ranked.size() && j < quota; ++j) {
        if (!started[k + 1].count(ranked[j].index)) return std::make_pair(ranked[j].index, k + 1);
      }
    }
    for (size_t i = 0; i < trial_count; ++i) {
      if (!started[0].count(static_cast<int>(i))) return std::make_pair(static_cast<int>(i), 0);
    }
    return std::nullopt;
  };
  std::vector<Running> running;
  std::map<int64_t, size_t> rung_of;
  for (size_t k = 0; k < rungs.size(); ++k) rung_of[rungs[k]] = k;
  while (true) {
    while (!interrupted() && static_cast<int>(running.size()) < options.parallel) {
      auto job = next_job();
      if (!job) break;
      started[job->second].insert(job->first);
      if (options.progress && job->second > 0) {
        std::cerr << "sweep: promoting " << trial_name(job->first) << " to " << rungs[job->second]
                  << " steps\n";
      }
      running.push_back(launch(options, trials, job->first, rungs[job->second]));
    }
    if (running.empty()) break;
    const auto ended = next_ended(running, options, interruption, outcome);
    if (!ended) continue;
    const Running& done = ended->run;
    const size_t rung_index = rung_of.at(done.steps);
    TrialResult result = record(options, trials, done, ended->exit_code, ended->wall);
    results[rung_index][done.index] = result;
    if (options.progress) {
      std::cerr << "sweep: " << trial_name(result.index) << " at " << done.steps << " steps "
                << result.status;
      if (result.has_metric)
        std::cerr << " " << options.metric << "=" << format_real(result.metric);
      std::cerr << " | " << running.size() << " running |";
      for (size_t j = 0; j < rungs.size(); ++j) {
        std::cerr << " " << results[j].size() << "@" << rungs[j];
      }
      std::cerr << "\n";
    }
  }
  // Each trial at the furthest rung it reached.
  std::map<int, TrialResult> last;
  for (const auto& rung : results) {
    for (const auto& [index, result] : rung) last[index] = result;
  }
  return last;
}

}  // namespace

std::vector<int64_t> halving_rungs(int64_t min_steps, int64_t max_steps, int eta) {
  std::vector<int64_t> rungs;
  for (int64_t s = min_steps; s < max_steps; s *= eta) rungs.push_back(s);
  rungs.push_back(max_steps);
  return rungs;
}

SweepOutcome run_sweep(const SweepOptions& options, const std::vector<Assignment>& trials,
                       const Interruption& interruption) {
  // One sweep at a time in a directory, as one trainer in a train_dir.
  const DirectoryLock lock(options.out_dir);
  for (size_t i = 0; i < trials.size(); ++i) {
    const fs::path dir = fs::path(options.out_dir) / trial_name(static_cast<int>(i));
    if (fs::exists(dir / "trial.args") && slurp(dir / "trial.args") != args_text(trials[i])) {
      throw ConfigError(dir.string() + " holds another sweep's trial (trial.args " +
                        "differs): use another output directory");
    }
  }
  check_sweep_args(options);
  SweepOutcome outcome;
  auto interrupted = [&] { return interruption.signal.load() != 0; };
  std::vector<int> members(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) members[i] = static_cast<int>(i);
  // Each trial's result at the last rung it reached.
  std::map<int, TrialResult> last;
  const std::vector<int64_t> rungs =
      options.halving.min_steps > 0
          ? halving_rungs(options.halving.min_steps, options.halving.max_steps, options.halving.eta)
          : std::vector<int64_t>{0};
  if (options.halving.asynchronous && options.halving.min_steps > 0) {
    last = run_asha(options, trials, rungs, interruption, outcome);
  }
  for (size_t k = 0; k < rungs.size() && !members.empty() && !options.halving.asynchronous; ++k) {
    auto rung = run_rung(options, trials, members, rungs[k], interruption, outcome);
    for (auto& [index, result] : rung) last[index] = result;
    // A rung with trials stopped by a signal is incomplete: no promotions.
    if (interrupted() || outcome.stopped > 0 || k + 1 == rungs.size()) break;
    // Successive halving: the best 1/eta (at least one) go on, resuming.
    std::vector<TrialResult> ranked;
    for (auto& [index, result] : rung) ranked.push_back(result);
    std::sort(ranked.begin(), ranked.end(), better);
    const size_t keep = std::max<size_t>(1, members.size() / options.halving.eta);
    members.clear();
    for (size_t j = 0; j < ranked.size() && j < keep; ++j) {
      if (ranked[j].has_metric) members.push_back(ranked[j].index);
    }
    std::sort(members.begin(), members.end());
    if (options.progress && !members.empty()) {
      std::cerr << "sweep: promoting " << members.size() << " of " << ranked.size() << " trials to "
                << rungs[k + 1] << " steps\n";
    }
  }
  std::vector<TrialResult>& out = outcome.results;
  for (auto& [index, result] : last) out.push_back(std::move(result));
  // The furthest rung first, then the metric.
  // With a metric first; under halving the furthest rung next; then the metric.
  const bool halving = options.halving.min_steps > 0;
  std::sort(out.begin(), out.end(), [halving](const TrialResult& lhs, const TrialResult& rhs) {
    if (lhs.has_metric != rhs.has_metric) return lhs.has_metric;
    if (halving && lhs.final_step != rhs.final_step) return lhs.final_step > rhs.final_step;
    return better(lhs, rhs);
  });
  io::write_file_atomic((fs::path(options.out_dir) / "results.csv").string(),
                        results_csv(out, options.metric));
  io::write_file_atomic(
      (fs::path(options.out_dir) / "report.html").string(),
      report_html(out, options.metric,
                  "Sweep report: " + fs::path(options.out_dir).filename().string()));
  return outcome;
}

const std::vector<std::string>& reported_fields() {
  static const std::vector<std::string> kFields = {"validation_accuracy", "test_accuracy"};
  return kFields;
}

std::string results_csv(const std::vector<TrialResult>& results, const std::string& metric) {
  std::set<std::string> names;
  std::vector<std::string> shown;  // reported fields some trial has
  for (const auto& field : reported_fields()) {
    if (field == metric) continue;
    for (const auto& result : results) {
      if (result.reported.count(field)) {
        shown.push_back(field);
        break;
      }
    }
  }
  for (const auto& result : results) {
    for (const auto& [key, value] : result.params) names.insert(key);
  }
  auto cell = [](const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
  };
  std::ostringstream os;
  os << "trial,status," << cell(metric);
  for (const auto& field : shown) os << "," << field;
  for (const auto& name : names) os << "," << cell(name);
  os << ",final_step,wall_secs,exit_code,train_dir\n";
  for (const auto& result : results) {
    os << trial_name(result.index) << "," << result.status << ","
       << (result.has_metric ? format_real(result.metric) : "");
    for (const auto& field : shown) {
      auto it = result.reported.find(field);
      os << "," << (it == result.reported.end() ? "" : format_real(it->second));
    }
    for (const auto& name : names) {
      auto it = result.params.find(name);
      os << "," << (it == result.params.end() ? "" : cell(it->second));
    }
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.1f", result.wall_secs);
    os << "," << result.final_step << "," << wall << "," << result.exit_code << ","
       << cell(result.dir) << "\n";
  }
  return os.str();
}

}  // namespace fastnn::sweep
