// Runs a sweep's trials: each one a train_image_classifier process (or a
// command submitted through a launcher template) in a train_dir of its own,
// N at a time, and collects their metrics.json into results.csv.
//
// A sweep directory is resumable: each finished trial leaves result.json,
// so running the same sweep again runs only the trials without one (a trial
// killed or stopped by a signal midway resumes from its own checkpoints). A
// failed or diverged trial is recorded and the sweep goes on. One sweep at
// a time holds a directory (out_dir/.lock).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "src/sweep/search_space.h"

namespace fastnn::sweep {

struct SweepOptions {
  /// The trainer binary.
  std::string trainer;
  /// Base hyperparameter file (--config); empty: none.
  std::string base_config;
  /// Extra --key=value arguments given to every trial.
  std::vector<std::string> extra_args;
  /// The sweep directory (trial-NNN/ under it, results.csv).
  std::string out_dir;
  /// Trials at a time. REQUIRES: >= 1.
  int parallel = 1;
  /// Cores to share between the parallel trials (intra-op and decode
  /// threads of each = max(1, cores / parallel), unless a trial sets them).
  int cores = 1;
  /// "srun -N1 -n1 {cmd}": every {cmd} is replaced by the trial's
  /// shell-quoted command (none: it goes at the end) and the line runs
  /// under /bin/sh; empty: run it directly.
  std::string launcher;
  /// metrics.json field to rank trials by (higher is better).
  std::string metric = "validation_accuracy";
  /// Progress lines on stderr.
  bool progress = true;
  /// Successive halving (off while min_steps is 0): every trial trains to
  /// min_steps, the best 1/eta go on to min_steps*eta, ... up to max_steps;
  /// a promoted trial resumes from its own checkpoint.
  struct Halving {
    int64_t min_steps = 0;
    int64_t max_steps = 0;
    int eta = 3;
    /// ASHA: promote as soon as a trial ranks in the best 1/eta of its
    /// rung's results so far, without waiting for the rung to finish.
    bool asynchronous = false;
  } halving;
};

struct TrialResult {
  int index = 0;
  Assignment params;
  std::string dir;
  /// ok, diverged, failed, no_metric.
  std::string status;
  int exit_code = 0;
  double metric = 0;
  bool has_metric = false;
  int64_t final_step = 0;
  double wall_secs = 0;
  /// validation_accuracy / test_accuracy from the trial's metrics.json,
  /// when it has them (the trainer's result_format evaluation).
  std::map<std::string, double> reported;
};

/// The signals the sweep received, set by its signal handler.
struct Interruption {
  /// The last one; 0 while none came.
  std::atomic<int> signal{0};
  /// How many: each is passed on to every running trial once.
  std::atomic<int> count{0};
};

/// What run_sweep did.
struct SweepOutcome {
  /// Every trial's result (earlier runs' included), best first; under
  /// halving each trial at the furthest rung it reached.
  std::vector<TrialResult> results;
  /// Trials of this run stopped by a signal (the sweep's or their own: exit
  /// 6, 130, 143) and so left without a result; they resume next time.
  int stopped = 0;
  /// 130 when a trial so stopped exited 130 (SIGINT), else 143.
  int stop_code = 143;
};

/// The metrics.json fields results.csv shows beside the ranked metric.
const std::vector<std::string>& reported_fields();

/// Runs every trial of `trials` that has no result yet (with halving, rung
/// by rung; result-<steps>.json per rung); returns all results (earlier
/// runs' included), best first (with halving: the furthest rung first).
/// Once `interruption` is set it starts nothing more and passes each signal
/// on to the running trials once (each in a process group of its own, so
/// Ctrl-C in a terminal reaches them only this way). Locks `out_dir` first.
/// Throws ConfigError when another sweep holds `out_dir`, when it holds
/// another sweep's trial at an index, or one run with other trial arguments
/// (check_sweep_args).
SweepOutcome run_sweep(const SweepOptions& options, const std::vector<Assignment>& trials,
                       const Interruption& interruption);

/// The trainer's command line for a trial whose directory is `trial_dir`
/// (its train_dir is trial_dir/train).
std::vector<std::string> trial_command(const SweepOptions& options, const Assignment& params,
                                       const std::string& trial_dir);

/// results.csv: trial, status, the metric, validation_accuracy and
/// test_accuracy (when a trial has them and the metric is another),
/// every parameter, final_step, wall_secs, exit_code, train_dir; rows best
/// first.
std::string results_csv(const std::vector<TrialResult>& results, const std::string& metric);

/// "trial-007".
std::string trial_name(int index);

/// Successive halving's budgets: min, min*eta, ... below max, then max.
std::vector<int64_t> halving_rungs(int64_t min_steps, int64_t max_steps, int eta);

}  // namespace fastnn::sweep
