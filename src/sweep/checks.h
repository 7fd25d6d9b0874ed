// What a sweep checks before its first trial starts, so that a setup every
// trial would fail on is one exit 2 and not N failed trials, and what its
// exit code says when it ends.
#pragma once

#include <string>
#include <vector>

#include "src/sweep/runner.h"
#include "src/sweep/search_space.h"

namespace fastnn::sweep {

/// Throws ConfigError, before anything is written, for what the trainer
/// would refuse with exit 2 in every trial or in some:
///   - a name of `names` (the parameters of the PCS or CSV file `source`)
///     that is no hyperparameter key or alias (with the closest key), or
///     train_dir (the sweep sets it);
///   - stop_at_step as a parameter under successive halving;
///   - the base config and the arguments after -- as the trainer loads them
///     (a missing or unreadable file, an unknown key, a bad value, --help);
///   - each trial's whole command line likewise, named "trial-NNN".
void check_setup(const SweepOptions& options, const std::vector<Assignment>& trials,
                 const std::vector<std::string>& names, const std::string& source);

/// out_dir/sweep.args records what every trial shares: --config (path and
/// content CRC) and the arguments after --. Writes it for a new sweep; on a
/// rerun throws ConfigError naming what differs (another stop_at_step would
/// mix budgets in results.csv). REQUIRES: out_dir locked by this process.
void check_sweep_args(const SweepOptions& options);

/// The sweep's exit code; `message` (when not 0) says why, in one line:
///   130 / 143  `signal` was received (SIGINT / SIGTERM), or trials were
///              stopped by a signal (outcome.stopped): run it again;
///   0          some trial has the metric;
///   2          every trial exited 0 without the metric (a wrong --metric);
///   2 .. 5     every trial failed with that one code (4: all diverged);
///   1          they failed with several codes, or 1, or a signal's.
int sweep_exit_code(const SweepOutcome& outcome, const std::string& metric, int signal,
                    std::string* message);

}  // namespace fastnn::sweep
