#include "src/sweep/checks.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/config/hparams_table.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::sweep {
namespace fs = std::filesystem;
namespace {

const std::string kCommandLine = "command line: ";

void check_name(const std::string& name, const std::string& source) {
  if (name == "train_dir") {
    throw ConfigError(source +
                      ": 'train_dir' cannot be a parameter: the sweep gives each trial "
                      "its own (trial-NNN/train)");
  }
  if (config::find_key(name) || config::resolve_alias(name)) return;
  const std::string guess = closest_key(name);
  throw ConfigError(source + ": " + config::quote_value(name) + " is not a hyperparameter key" +
                    (guess.empty() ? " (train_image_classifier --help lists them)"
                                   : "; did you mean '" + guess + "'?"));
}

// Loads `argv` as the trainer does (nothing runs). Errors start with
// `what`, and those of the trainer's "command line" (the sweep's arguments
// after -- and the trial's parameters) with `args` in its place.
void load_as_trainer(const std::vector<std::string>& argv, const std::string& what,
                     const std::string& args) {
  std::vector<const char*> raw;
  for (const auto& a : argv) raw.push_back(a.c_str());
  LoadResult r;
  try {
    r = load_hparams(static_cast<int>(raw.size()), raw.data());
  } catch (const ConfigError& e) {
    std::string why = e.what();
    if (why.rfind(kCommandLine, 0) == 0) why.replace(0, kCommandLine.size(), args);
    throw ConfigError(what + why);
  }
  if (r.help || r.version) {
    throw ConfigError(what + args + "--help and --version are for train_image_classifier " +
                      "itself, not for a sweep's trials");
  }
  if (r.dry_run || r.print_cluster) {
    throw ConfigError(what + args + "--dry_run and --print_cluster would make every trial " +
                      "train nothing; sweep --dry_run lists the trials");
  }
}

std::string describe(const Assignment& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return config::quote_value(s);
}

// What every trial shares, as sweep.args holds it.
nlohmann::json shared_args(const SweepOptions& o) {
  nlohmann::json j = {{"args", nlohmann::json::array()}};
  if (!o.base_config.empty()) {
    j["args"].push_back("--config=" + o.base_config);
    const std::string text = io::read_file(o.base_config);
    j["config_crc32c"] = io::crc32c(text.data(), text.size());
  }
  for (const auto& a : o.extra_args) j["args"].push_back(a);
  return j;
}

// "a b" of `from` not in `other` (as many times as they are missing).
std::string missing_from(std::vector<std::string> from, std::vector<std::string> other) {
  std::string out;
  for (const auto& a : from) {
    auto it = std::find(other.begin(), other.end(), a);
    if (it != other.end()) {
      other.erase(it);
    } else {
      out += (out.empty() ? "" : " ") + a;
    }
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace

void check_setup(const SweepOptions& o, const std::vector<Assignment>& trials,
                 const std::vector<std::string>& names, const std::string& source) {
  for (const auto& name : names) check_name(name, source);
  for (const auto& t : trials) {
    for (const auto& [name, value] : t) check_name(name, source);
    if (o.halving.min_steps > 0 && t.count("stop_at_step")) {
      throw ConfigError(source +
                        ": successive halving sets stop_at_step itself; take it out of "
                        "the search space or trials");
    }
  }
  // What every trial shares first, so its errors are named once.
  const std::string dir = (fs::path(o.out_dir) / trial_name(0)).string();
  load_as_trainer(trial_command(o, {}, dir), "", "the arguments after --: ");
  for (size_t i = 0; i < trials.size(); ++i) {
    load_as_trainer(trial_command(o, trials[i], dir),
                    trial_name(static_cast<int>(i)) + " (" + describe(trials[i]) + "): ", "");
  }
}

void check_sweep_args(const SweepOptions& options) {
  const fs::path file = fs::path(options.out_dir) / "sweep.args";
  const nlohmann::json now = shared_args(options);
  if (fs::exists(file)) {
    nlohmann::json then;
    std::vector<std::string> then_args;
    try {
      then = nlohmann::json::parse(io::read_file(file.string()));
      then_args = then.at("args").get<std::vector<std::string>>();
    } catch (const std::exception&) {
      throw ConfigError(file.string() + " is unreadable, so a rerun cannot tell whether its " +
                        "trials ran with these arguments: use another --out (or remove the " +
                        "file if they are the same)");
    }
    if (then == now) return;
    std::string why;
    const auto now_args = now.at("args").get<std::vector<std::string>>();
    if (then_args != now_args) {
      const std::string only_then = missing_from(then_args, now_args),
                        only_now = missing_from(now_args, then_args);
      why = only_then == only_now ? "the same arguments in another order"
                                  : "then " + only_then + ", now " + only_now;
    } else {
      why = "the base config " + config::quote_value(options.base_config) + " changed since";
    }
    throw ConfigError(
        "--out " + config::quote_value(options.out_dir) +
        " holds a sweep run with other trial arguments (" + file.string() + "): " + why +
        "; rerun it with the same --config and arguments after --, or use " + "another --out");
  }
  io::write_file_atomic(file.string(), now.dump(2) + "\n");
}

int sweep_exit_code(const SweepOutcome& outcome, const std::string& metric, int signal,
                    std::string* message) {
  const auto& results = outcome.results;
  if (signal != 0 || outcome.stopped > 0) {
    *message = (signal != 0 ? std::string("interrupted")
                            : std::to_string(outcome.stopped) + " trial(s) stopped by a signal") +
               "; " + std::to_string(results.size()) +
               " trials have a result: run the same command again to finish the rest (a " +
               "stopped trial resumes from its checkpoint)";
    if (signal != 0) return signal == SIGINT ? kExitSigint : kExitSigterm;
    return outcome.stop_code;
  }
  std::map<int, std::vector<int>> failed;  // exit code -> trials
  for (const auto& result : results) {
    if (result.has_metric) return kExitOk;
    if (result.status != "no_metric") failed[result.exit_code].push_back(result.index);
  }
  if (failed.empty()) {
    *message = "no trial produced a result: every trial ended without " +
               config::quote_value(metric) +
               " in its metrics.json (--metric names a field of train_dir/metrics.json, e.g. "
               "validation_accuracy, which needs a validation split)";
    return kExitUsage;
  }
  std::string list;
  for (const auto& [code, trials] : failed) {
    list += std::string(list.empty() ? "" : "; ") + "exit " + std::to_string(code) + ":";
    for (size_t i = 0; i < trials.size() && i < 5; ++i) list += " " + trial_name(trials[i]);
    if (trials.size() > 5) list += " and " + std::to_string(trials.size() - 5) + " more";
  }
  const int first = failed.begin()->second.front();
  std::string log;
  for (const auto& result : results) {
    if (result.index == first) log = (fs::path(result.dir).parent_path() / "log.txt").string();
  }
  *message = "no trial produced a result (" + list + "); see " + log;
  const int code = failed.begin()->first;
  const bool one_known_code =
      failed.size() == 1 &&
      ((code >= kExitUsage && code <= kExitDistributed) || code == kExitOutOfMemory);
  return one_known_code ? code : kExitInternal;
}

}  // namespace fastnn::sweep
