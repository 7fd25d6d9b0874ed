// A sweep's search space, in SMAC's PCS syntax, and the trials drawn from it:
//
//   learning_rate real [1e-4, 1e-1] [1e-2] log
//   batch_size integer [16, 256] [32]
//   optimizer categorical {sgd, momentum, rmsprop} [rmsprop]
//   momentum | optimizer in {momentum}          # a condition
//   # comments and blank lines are ignored
//
// or explicit trials as a CSV file (a header of hyperparameter names, one
// row per trial). Either may start with a UTF-8 byte-order mark and end its
// lines in CRLF. Every value is a string as it would be given on the
// command line (--name=value); nothing here knows what the keys mean
// (check_setup in checks.h does).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fastnn::sweep {

struct Param {
  enum class Kind { kReal, kInteger, kCategorical };
  std::string name;
  Kind kind = Kind::kReal;
  double lo = 0, hi = 0;             // real / integer
  bool log = false;                  // sample log-uniformly
  std::vector<std::string> choices;  // categorical
  std::string default_value;
};

/// `child` is active only when `parent`'s value is one of `values`.
struct Condition {
  std::string child;
  std::string parent;
  std::vector<std::string> values;
};

struct SearchSpace {
  std::vector<Param> params;
  std::vector<Condition> conditions;
};

/// One trial's hyperparameters, name -> value, in a stable order.
using Assignment = std::map<std::string, std::string>;

/// Parses PCS text; `source` names it in errors. Throws ConfigError
/// "<source>:<line>: ..." for anything it does not understand (a bad range,
/// a default outside it, log with a bound <= 0, a condition on an unknown
/// parameter, a name given twice).
SearchSpace parse_pcs(const std::string& text, const std::string& source);

/// Parses a CSV of explicit trials (header = names; quotes allowed).
/// Throws ConfigError "<source>:<line>: ..." for ragged rows or an empty file.
std::vector<Assignment> parse_trials_csv(const std::string& text, const std::string& source);

/// `n` draws, reproducible from `seed`: reals uniform (or log-uniform),
/// integers uniform over [lo, hi] (log: rounded log-uniform), categoricals
/// uniform. Inactive parameters (conditions) are left out.
std::vector<Assignment> random_trials(const SearchSpace& space, int n, uint64_t seed);

/// Every combination: categoricals take each choice, integers every value
/// when there are at most `points` of them, reals (and wider integer
/// ranges) `points` values evenly spaced (in log space when log), ends
/// included. Inactive parameters are left out and duplicates removed.
std::vector<Assignment> grid_trials(const SearchSpace& space, int points);

/// `a` without the parameters its conditions switch off.
Assignment active_only(const SearchSpace& space, Assignment a);

/// A value as a command line takes it: reals with up to 6 significant digits.
std::string format_real(double v);

}  // namespace fastnn::sweep
