// The hyperparameter key table: one row per key (name, group, field, help,
// valid values, range, flags) plus the alias list. Internal to the config
// component; everything user-visible about a key is read from here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fastnn/hparams.h"

namespace fastnn::config {

/// Help/doc groups, in display order.
enum class Group {
  kDataset,
  kPreprocessing,
  kModel,
  kLearningRate,
  kOptimizer,
  kLog,
  kPerformance,
  kCluster,
  kIO,
};

/// All groups in display order.
const std::vector<Group>& all_groups();

/// "Dataset", "Learning rate", ...
const char* group_title(Group g);

/// A pointer to the HParams field that holds a key.
using Field =
    std::variant<int64_t HParams::*, double HParams::*, bool HParams::*, std::string HParams::*,
                 std::optional<int64_t> HParams::*, std::optional<double> HParams::*>;

/// Allowed numeric interval; a missing bound is unbounded.
struct Range {
  std::optional<double> lo, hi;
  bool lo_open = false, hi_open = false;

  /// True when `v` lies in the interval.
  bool contains(double v) const;
  /// ">= 1", "> 0", "<= 0", "in [0, 1)", or "" when unbounded.
  std::string describe() const;
};

/// v >= lo.
Range at_least(double lo);
/// v > lo.
Range above(double lo);
/// v <= hi.
Range at_most(double hi);
/// lo <= v <= hi, with optionally open ends.
Range between(double lo, double hi, bool lo_open = false, bool hi_open = false);

/// Row flag: accepted for compatibility, has no effect.
constexpr unsigned kIgnored = 1;

/// One hyperparameter key.
struct KeySpec {
  const char* name;
  Field field;
  Group group;
  const char* help;
  Range range = {};
  std::vector<std::string> choices = {};  // empty: any value
  unsigned flags = 0;
  const char* default_note = nullptr;  // shown as "DEFAULT (note)"

  /// True for rows flagged kIgnored.
  bool ignored() const { return (flags & kIgnored) != 0; }
};

/// Every key, in display order within each group.
const std::vector<KeySpec>& key_table();

/// The row for `name` (canonical names only), or nullptr.
const KeySpec* find_key(std::string_view name);

/// An accepted alternative spelling of a key.
struct Alias {
  const char* alias;
  const char* canonical;
};

/// The accepted aliases.
const std::vector<Alias>& alias_table();

/// The canonical name for alias `name`, or nullptr if it is no alias.
const char* resolve_alias(std::string_view name);

/// "int", "float", "bool", "str", "int or None", "float or None".
std::string type_name(const KeySpec& spec);

/// Parses `text` (a raw token, quotes allowed) into the key's field.
/// Returns "" on success, else the reason without location, e.g.
/// "learning_rate: 'abc' is not a number (expected a float, e.g. 0.01)".
std::string assign_value(const KeySpec& spec, std::string_view text, HParams* hp);

/// The key's value as a token that assign_value reads back exactly.
std::string format_value(const KeySpec& spec, const HParams& hp);

/// The value as a number for range checks; nullopt for strings, bools and
/// None.
std::optional<double> numeric_value(const KeySpec& spec, const HParams& hp);

/// The key's string value; nullptr for non-string keys.
const std::string* string_value(const KeySpec& spec, const HParams& hp);

/// True when the key holds the same value in `a` and `b`.
bool same_value(const KeySpec& spec, const HParams& a, const HParams& b);

}  // namespace fastnn::config
