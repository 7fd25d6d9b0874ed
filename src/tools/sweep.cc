// sweep: runs train_image_classifier over a search space (SMAC's PCS
// syntax, random draws or a grid) or a CSV of explicit trials, N at a time,
// each in its own train_dir, and ranks them in results.csv.
//
//   sweep --config base.cfg --space space.pcs --num_trials 20 --parallel 2
//         --out runs/sweep1 [--metric validation_accuracy] [-- --stop_at_step=2000]
//
// --min_steps R --max_steps M --eta E: successive halving; every trial runs
// R steps, the best 1/E resume from their checkpoints to R*E, ... up to M;
// with --asha without waiting for a rung to finish.
// Rerun with the same arguments after an interruption: only the trials
// without a result run (an interrupted trial resumes from its checkpoints).
// Exit (checks.h, sweep_exit_code): 0 some trial has the metric; 2 bad
// arguments, search space, base config or parameter name, before any trial
// (or --metric in no trial's metrics.json); 2-5 every trial failed with
// that code; 1 they failed otherwise; 130/143 interrupted.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "fastnn/errors.h"
#include "src/log/failure.h"
#include "src/sweep/checks.h"
#include "src/sweep/runner.h"
#include "src/sweep/search_space.h"

namespace {

fastnn::sweep::Interruption g_interruption;

void on_signal(int sig) {
  g_interruption.signal = sig;
  ++g_interruption.count;
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fastnn::ConfigError(std::string(what) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// train_image_classifier beside this binary.
std::string default_trainer(const char* argv0) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) self = argv0;
  return (self.parent_path() / "train_image_classifier").string();
}

// What the command line asks for, beside the runner's options.
struct SweepArgs {
  fastnn::sweep::SweepOptions options;
  std::string space_file, trials_file, mode = "random";
  int num_trials = 10, grid_points = 3;
  uint64_t seed = 0;
  bool dry_run = false;
};

void add_trial_options(CLI::App& app, SweepArgs& a) {
  app.add_option("--config", a.options.base_config, "Base hyperparameter file of every trial");
  app.add_option("--space", a.space_file, "Search space in SMAC's PCS syntax");
  app.add_option("--trials", a.trials_file, "CSV of explicit trials (header: hyperparameters)");
  app.add_option("--mode", a.mode, "With --space: random draws or a grid")
      ->check(CLI::IsMember({"random", "grid"}));
  app.add_option("--num_trials", a.num_trials, "Random draws")->check(CLI::Range(1, 100000));
  app.add_option("--seed", a.seed, "Seed of the random draws");
  app.add_option("--grid_points", a.grid_points, "Grid values per real parameter")
      ->check(CLI::Range(2, 1000));
  app.add_flag("--dry_run", a.dry_run, "Print the trials (name and parameters) and run nothing");
}

void add_run_options(CLI::App& app, fastnn::sweep::SweepOptions& options) {
  app.add_option("--out", options.out_dir,
                 "Sweep directory (trial-NNN/, results.csv), locked while the sweep runs")
      ->required();
  app.add_option("--parallel", options.parallel, "Trials at a time")->check(CLI::Range(1, 1024));
  app.add_option("--cores", options.cores, "Cores the parallel trials share")
      ->check(CLI::Range(1, 4096));
  app.add_option("--launcher", options.launcher,
                 "Command template that submits a trial, e.g. 'srun -N1 -n1 {cmd}': every "
                 "{cmd} is the trial's command line");
  app.add_option("--metric", options.metric,
                 "metrics.json field to maximize (validation_accuracy: the trials' held-out "
                 "split, see validation_fraction)")
      ->capture_default_str();
  app.add_option("--trainer", options.trainer, "The trainer binary");
  app.add_option("--min_steps", options.halving.min_steps,
                 "Successive halving: every trial's first budget in steps (0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--max_steps", options.halving.max_steps, "Successive halving: the last budget");
  app.add_flag("--asha", options.halving.asynchronous,
               "Successive halving without waiting for rungs to finish (ASHA): promote a "
               "trial as soon as it ranks in the best 1/eta of its rung so far");
  app.add_option("--eta", options.halving.eta,
                 "Successive halving: keep the best 1/eta, multiply the budget by eta")
      ->check(CLI::Range(2, 100));
  app.add_option("extra", options.extra_args, "Arguments after -- go to every trial");
}

// The trials of --trials or --space, checked against the base config;
// `names` gets the space's parameters, active or not.
std::vector<fastnn::sweep::Assignment> make_trials(const SweepArgs& a,
                                                   std::vector<std::string>& names) {
  using fastnn::ConfigError;
  namespace sweep = fastnn::sweep;
  if (a.space_file.empty() == a.trials_file.empty()) {
    throw ConfigError("give exactly one of --space (a PCS file) and --trials (a CSV file)");
  }
  std::vector<sweep::Assignment> trials;
  if (!a.trials_file.empty()) {
    trials = sweep::parse_trials_csv(read_file(a.trials_file, "--trials"), a.trials_file);
  } else {
    const auto space = sweep::parse_pcs(read_file(a.space_file, "--space"), a.space_file);
    for (const auto& param : space.params) names.push_back(param.name);
    trials = a.mode == "grid" ? sweep::grid_trials(space, a.grid_points)
                              : sweep::random_trials(space, a.num_trials, a.seed);
    if (trials.size() > 100000) {
      throw ConfigError("the grid has " + std::to_string(trials.size()) +
                        " trials: lower --grid_points or use --mode random");
    }
  }
  const auto& halving = a.options.halving;
  if (halving.min_steps > 0 && halving.max_steps <= halving.min_steps) {
    throw ConfigError("--max_steps must be above --min_steps for successive halving");
  }
  return trials;
}

void print_trials(const std::vector<fastnn::sweep::Assignment>& trials) {
  for (size_t i = 0; i < trials.size(); ++i) {
    std::cout << fastnn::sweep::trial_name(static_cast<int>(i));
    for (const auto& [key, value] : trials[i]) std::cout << " " << key << "=" << value;
    std::cout << "\n";
  }
}

// Runs the trials with SIGINT/SIGTERM recorded, prints the best five and
// returns the sweep's exit code.
int run_trials(fastnn::sweep::SweepOptions& options,
               const std::vector<fastnn::sweep::Assignment>& trials) {
  namespace sweep = fastnn::sweep;
  if (access(options.trainer.c_str(), X_OK) != 0 && options.launcher.empty()) {
    throw fastnn::ConfigError("--trainer: '" + options.trainer + "' is not an executable");
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  options.progress = true;
  const auto outcome = sweep::run_sweep(options, trials, g_interruption);
  const auto& results = outcome.results;
  std::cout << "sweep: results in "
            << (std::filesystem::path(options.out_dir) / "results.csv").string() << "\n";
  for (size_t i = 0; i < results.size() && i < 5; ++i) {
    const auto& result = results[i];
    std::cout << "  " << sweep::trial_name(result.index) << " " << result.status;
    if (result.has_metric)
      std::cout << " " << options.metric << "=" << sweep::format_real(result.metric);
    for (const auto& [key, value] : result.params) std::cout << " " << key << "=" << value;
    std::cout << "\n";
  }
  std::string why;
  const int code = sweep::sweep_exit_code(outcome, options.metric, g_interruption.signal, &why);
  if (code != fastnn::kExitOk)
    std::cerr << "sweep: " << (code == fastnn::kExitUsage ? "error: " : "") << why << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fastnn;
  CLI::App app{"sweep: train_image_classifier over a search space, N trials at a time"};
  SweepArgs args;
  args.options.trainer = default_trainer(argv[0]);
  args.options.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  add_trial_options(app, args);
  add_run_options(app, args.options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  try {
    std::vector<std::string> names;
    const auto trials = make_trials(args, names);
    sweep::check_setup(args.options, trials, names,
                       args.trials_file.empty() ? args.space_file : args.trials_file);
    if (args.dry_run) {
      print_trials(trials);
      return kExitOk;
    }
    return run_trials(args.options, trials);
  } catch (...) {
    return report_failure("sweep", failure_of(std::current_exception()));
  }
}
