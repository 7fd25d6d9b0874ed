// Loading hyperparameters from a FastNN key=value file and the command line,
// validation, and the help / config.cfg / Markdown renderings of the table.
#include "fastnn/hparams.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fastnn/errors.h"
#include "src/config/hparams_table.h"
#include "src/config/value_parse.h"

namespace fastnn {
namespace {

using config::KeySpec;

constexpr int kMaxSuggestDistance = 3;
// Limits on a config file, which may be anything a user points --config at
// (/dev/zero, a checkpoint, a log): a key=value file is small text.
constexpr size_t kMaxConfigLineBytes = 64 * 1024;
constexpr uint64_t kMaxConfigFileBytes = 4 * 1024 * 1024;
constexpr size_t kHelpWidth = 80;

// One key=value to apply, from the file or the command line.
struct Setting {
  const KeySpec* spec;
  std::string value;
  std::string written;  // the name as the user wrote it (maybe an alias)
};

// The canonical row for `name` (a key or an alias), or nullptr.
const KeySpec* resolve(const std::string& name) {
  if (const KeySpec* spec = config::find_key(name)) return spec;
  if (const char* canonical = config::resolve_alias(name)) {
    return config::find_key(canonical);
  }
  return nullptr;
}

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int next = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

// Closest of the keys, aliases (as their canonical key) and `extra` names.
// Names whose length differs by more than the distance are skipped unread,
// so a 10 MB --key costs nothing.
std::string closest(const std::string& key, const std::vector<std::string>& extra) {
  std::vector<std::pair<std::string, std::string>> candidates;
  for (const KeySpec& spec : config::key_table()) {
    candidates.emplace_back(spec.name, spec.name);
  }
  for (const config::Alias& a : config::alias_table()) {
    candidates.emplace_back(a.alias, a.canonical);
  }
  for (const std::string& e : extra) candidates.emplace_back(e, e);
  std::string best;
  int best_distance = kMaxSuggestDistance + 1;
  const size_t max_gap = kMaxSuggestDistance;
  for (const auto& [name, answer] : candidates) {
    if (key.size() > name.size() + max_gap || name.size() > key.size() + max_gap) {
      continue;
    }
    int d = edit_distance(config::lower(key), config::lower(name));
    if (d < best_distance) {
      best_distance = d;
      best = answer;
    }
  }
  return best;
}

std::string unknown_key(const std::string& name, const std::vector<std::string>& extra) {
  std::string guess = closest(name, extra);
  std::string msg = "unknown key " + config::quote_value(name);
  return guess.empty() ? msg + " (--help lists the keys)" : msg + "; did you mean '" + guess + "'?";
}

// `text` as the user typed it (a flag, a raw value) when short; cut and
// quoted by quote_value() when longer than a message may show.
std::string shown(const std::string& text) {
  return text.size() <= config::kMaxQuotedBytes ? text : config::quote_value(text);
}

// Sets one key; records its source; notes aliases and ignored keys.
void apply(const Setting& s, const std::string& location, HParams* hp,
           std::vector<std::string>* warnings) {
  const KeySpec& spec = *s.spec;
  if (s.written != spec.name) {
    warnings->push_back(location + ": '" + s.written + "' is an alias of '" + spec.name +
                        "'; use the canonical name");
  }
  std::string error = config::assign_value(spec, s.value, hp);
  if (!error.empty()) throw ConfigError(location + ": " + error);
  hp->sources[spec.name] = location;
  if (spec.ignored() && !config::same_value(spec, *hp, HParams())) {
    warnings->push_back(location + ": '" + spec.name +
                        "' has no effect in FastNN-C++ (ignored key)");
  }
}

// Splits a file line into key and raw value. Returns false for blank and
// comment lines; throws for malformed ones.
bool split_line(std::string_view line, const std::string& location, std::string* key,
                std::string* value) {
  std::string_view trimmed = config::trim(line);
  if (trimmed.empty() || trimmed.front() == '#') return false;
  size_t eq = trimmed.find('=');
  if (eq == std::string_view::npos) {
    throw ConfigError(location + ": missing '=' (expected key=value)");
  }
  std::string_view key_text = config::trim(trimmed.substr(0, eq));
  if (key_text.substr(0, 2) == "--") key_text.remove_prefix(2);
  if (key_text.empty()) throw ConfigError(location + ": missing key before '='");
  *key = std::string(key_text);
  std::string_view value_text = config::trim(trimmed.substr(eq + 1));
  if (!value_text.empty() && (value_text.front() == '\'' || value_text.front() == '"')) {
    // The closing quote is the one followed by the end or " # comment".
    for (size_t close = value_text.find(value_text.front(), 1); close != std::string_view::npos;
         close = value_text.find(value_text.front(), close + 1)) {
      std::string_view rest = value_text.substr(close + 1);
      std::string_view rest_trimmed = config::trim(rest);
      if (rest.empty() || (rest.size() != rest_trimmed.size() &&
                           (rest_trimmed.empty() || rest_trimmed.front() == '#'))) {
        *value = std::string(value_text.substr(0, close + 1));
        return true;
      }
    }
    throw ConfigError(location + ": " + shown(*key) + ": unterminated quote in " +
                      shown(std::string(value_text)));
  }
  for (size_t i = 0; i < value_text.size(); ++i) {
    if (value_text[i] == '#' && (i == 0 || value_text[i - 1] == ' ' || value_text[i - 1] == '\t')) {
      value_text = config::trim(value_text.substr(0, i));
      break;
    }
  }
  *value = std::string(value_text);
  return true;
}

// Reads line `n` of a config file into *line (without the newline; a
// trailing '\r' is dropped); false at the end. A NUL byte, a line over
// kMaxConfigLineBytes or a file over kMaxConfigFileBytes is a ConfigError
// raised before the excess is read, so `--config /dev/zero` fails at once.
bool read_config_line(std::istream& in, const std::string& path, int n, uint64_t* offset,
                      std::string* line) {
  line->clear();
  const std::string where = path + ":" + std::to_string(n);
  std::streambuf* buf = in.rdbuf();
  for (;;) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      if (line->empty()) return false;
      break;
    }
    if (++*offset > kMaxConfigFileBytes) {
      throw ConfigError("config file " + config::quote_value(path) + " is over " +
                        std::to_string(kMaxConfigFileBytes) + " bytes: not a key=value config");
    }
    if (c == '\n') break;
    if (c == '\0') {
      throw ConfigError(where + ": a NUL byte (at byte offset " + std::to_string(*offset - 1) +
                        "): this is a binary file, not a key=value config");
    }
    if (line->size() == kMaxConfigLineBytes) {
      throw ConfigError(where + ": the line is longer than " + std::to_string(kMaxConfigLineBytes) +
                        " bytes: not a key=value config");
    }
    line->push_back(static_cast<char>(c));
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

void load_file(const std::string& path, HParams* hp, std::vector<std::string>* warnings) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError("cannot read config file " + config::quote_value(path) + ": it is a folder");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read config file " + config::quote_value(path) + ": " +
                      std::strerror(errno));
  }
  std::map<std::string, int> first_line;
  std::string line;
  uint64_t offset = 0;
  for (int line_number = 1; read_config_line(in, path, line_number, &offset, &line);
       ++line_number) {
    const std::string location = path + ":" + std::to_string(line_number);
    if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // BOM
    Setting setting;
    if (!split_line(line, location, &setting.written, &setting.value)) continue;
    setting.spec = resolve(setting.written);
    if (!setting.spec) throw ConfigError(location + ": " + unknown_key(setting.written, {}));
    auto [it, fresh] = first_line.emplace(setting.spec->name, line_number);
    if (!fresh) {
      warnings->push_back(location + ": '" + setting.spec->name +
                          "' is set again (first set on line " + std::to_string(it->second) +
                          "); the last value wins");
    }
    apply(setting, location, hp, warnings);
  }
  if (first_line.empty()) {
    warnings->push_back(path +
                        ": the config file sets no key (it is empty or holds "
                        "only comments and blank lines)");
  }
}

// Notes a key given again on the command line (the last value wins).
void note_repeat(const std::string& key, const std::string& value,
                 std::map<std::string, std::string>* seen, std::vector<std::string>* warnings) {
  auto [it, fresh] = seen->emplace(key, value);
  if (fresh) return;
  warnings->push_back("command line: '" + key + "' is set again: " + config::quote_value(value) +
                      " replaces " + config::quote_value(it->second) + " (the last value wins)");
  it->second = value;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_help_or_version(const std::string& arg) {
  return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--version" ||
         arg == "-version";
}

std::string prefix(const HParams& hp, const std::string& key) {
  auto it = hp.sources.find(key);
  return it == hp.sources.end() ? "" : it->second + ": ";
}

std::string join_choices(const std::vector<std::string>& choices) {
  std::string out;
  for (const std::string& c : choices) {
    out += (out.empty() ? "" : ", ") + (c.empty() ? "''" : c);
  }
  return out;
}

// "None (from the dataset; FastNN: 100)", "0.01", ...
std::string default_text(const KeySpec& spec) {
  std::string text = config::format_value(spec, HParams());
  if (spec.default_note) text += std::string(" (") + spec.default_note + ")";
  return text;
}

// Word-wraps `text` to kHelpWidth; the first line is indented by `first`,
// the others by `rest`.
void append_wrapped(const std::string& text, size_t first, size_t rest, std::string* out) {
  std::istringstream words(text);
  std::string word;
  std::string line(first, ' ');
  size_t indent = first;
  while (words >> word) {
    if (line.size() > indent && line.size() + 1 + word.size() > kHelpWidth) {
      *out += line + "\n";
      indent = rest;
      line.assign(indent, ' ');
    }
    line += (line.size() > indent ? " " : "") + word;
  }
  *out += line + "\n";
}

// The help's explanation of a key: its text, valid values and range.
std::string long_help(const KeySpec& spec) {
  std::string text = spec.help;
  if (!spec.choices.empty()) {
    text += " One of: " + join_choices(spec.choices) + ".";
  }
  std::string bound = spec.range.describe();
  if (!bound.empty()) text += " Must be " + bound + ".";
  return text;
}

}  // namespace

std::string HParams::where(const std::string& key) const {
  auto it = sources.find(key);
  return it == sources.end() ? "default" : it->second;
}

namespace {

// --help or --version anywhere on the command line: nothing else is read.
bool asks_help_or_version(int argc, const char* const* argv, LoadResult& result) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!is_help_or_version(arg)) continue;
    (arg.find("version") != std::string::npos ? result.version : result.help) = true;
    return true;
  }
  return false;
}

// The command line's flags, one at a time: the tool's own (--config,
// --dry_run, --print_cluster, extra_keys) into the result, every other
// into a setting of the key table, applied after the config file.
class CommandLine {
 public:
  CommandLine(int argc, const char* const* argv, const std::vector<std::string>& extra_keys,
              LoadResult& result)
      : argc_(argc), argv_(argv), extra_keys_(extra_keys), result_(result) {}

  void parse() {
    for (i_ = 1; i_ < argc_; ++i_) parse_flag(argv_[i_]);
  }
  const std::vector<Setting>& settings() const { return settings_; }
  const std::vector<std::string>& repeats() const { return repeats_; }

 private:
  const std::string kCli = "command line";

  void parse_flag(const std::string& arg) {
    if (arg.size() < 2 || arg[0] != '-') {
      throw ConfigError(kCli + ": unexpected argument " + config::quote_value(arg) +
                        " (expected --KEY=VALUE)");
    }
    name_ = arg.substr(arg[1] == '-' ? 2 : 1);
    value_.clear();
    const size_t eq = name_.find('=');
    has_value_ = eq != std::string::npos;
    if (has_value_) {
      value_ = name_.substr(eq + 1);
      name_.resize(eq);
    }
    if (!tool_flag(arg)) key_flag(arg);
  }

  // The next argument as this flag's value, unless it is another flag.
  bool take_next() {
    if (i_ + 1 >= argc_ || std::string(argv_[i_ + 1]).rfind("--", 0) == 0) return false;
    value_ = argv_[++i_];
    return true;
  }

  bool tool_flag(const std::string& arg) {
    if (name_ == "dry_run" || name_ == "print_cluster") {
      bool on = true;
      if (has_value_ && !config::parse_bool(config::trim(value_), &on)) {
        throw ConfigError(kCli + ": " + shown(arg) + ": " + config::quote_value(value_) +
                          " is not a boolean (expected True or False)");
      }
      (name_ == "dry_run" ? result_.dry_run : result_.print_cluster) = on;
      return true;
    }
    if (name_ == "config") {
      if ((!has_value_ && !take_next()) || value_.empty()) {
        throw ConfigError(kCli + ": --config: missing file name");
      }
      if (!result_.config_path.empty()) throw ConfigError(kCli + ": --config given more than once");
      result_.config_path = value_;
      return true;
    }
    if (!contains(extra_keys_, name_)) return false;
    if (!has_value_ && !take_next()) value_ = "True";
    note_repeat(name_, value_, &given_, &repeats_);
    result_.extras[name_] = value_;
    return true;
  }

  // --KEY=VALUE, --KEY VALUE, --KEY (a bool's True) or --noKEY (its False).
  void key_flag(const std::string& arg) {
    Setting setting{resolve(name_), value_, name_};
    if (!setting.spec && name_.rfind("no", 0) == 0 && !has_value_) {
      const KeySpec* negated = resolve(name_.substr(2));
      if (negated && std::holds_alternative<bool HParams::*>(negated->field)) {
        settings_.push_back({negated, "False", name_.substr(2)});
        note_repeat(negated->name, "False", &given_, &repeats_);
        return;
      }
      if (negated) {
        throw ConfigError(kCli + ": " + shown(arg) + ": '" + negated->name +
                          "' is not a bool key, so it has no --no form");
      }
    }
    if (!setting.spec) {
      throw ConfigError(kCli + ": " + shown(arg) + ": " + unknown_key(name_, extra_keys_));
    }
    if (!has_value_) {
      if (std::holds_alternative<bool HParams::*>(setting.spec->field)) {
        setting.value = "True";
      } else if (take_next()) {
        setting.value = value_;
      } else {
        throw ConfigError(kCli + ": " + shown(arg) + ": missing value (expected " + shown(arg) +
                          "=VALUE)");
      }
    }
    note_repeat(setting.spec->name, setting.value, &given_, &repeats_);
    settings_.push_back(setting);
  }

  int argc_;
  const char* const* argv_;
  const std::vector<std::string>& extra_keys_;
  LoadResult& result_;
  int i_ = 1;
  std::string name_, value_;
  bool has_value_ = false;
  std::vector<Setting> settings_;
  std::map<std::string, std::string> given_;  // key -> its latest value
  std::vector<std::string> repeats_;          // after the file's warnings
};

}  // namespace

LoadResult load_hparams(int argc, const char* const* argv,
                        const std::vector<std::string>& extra_keys) {
  LoadResult result;
  if (asks_help_or_version(argc, argv, result)) return result;
  CommandLine command_line(argc, argv, extra_keys, result);
  command_line.parse();
  if (!result.config_path.empty()) {
    load_file(result.config_path, &result.hp, &result.warnings);
  }
  result.warnings.insert(result.warnings.end(), command_line.repeats().begin(),
                         command_line.repeats().end());
  for (const Setting& setting : command_line.settings()) {
    apply(setting, "command line", &result.hp, &result.warnings);
  }
  validate(result.hp);
  return result;
}

namespace {

// Each key's value against its row: writable, one of its choices, in range.
void validate_each_key(const HParams& hp) {
  for (const KeySpec& spec : config::key_table()) {
    const std::string head = prefix(hp, spec.name) + spec.name + ": ";
    const std::string* text = config::string_value(spec, hp);
    if (text && !config::unwritable_reason(*text).empty()) {
      throw ConfigError(head + config::quote_value(*text) + " " + config::unwritable_reason(*text) +
                        ", which no line of a config file (train_dir/config.cfg) "
                        "can hold");
    }
    if (text && !spec.choices.empty() && !contains(spec.choices, *text)) {
      throw ConfigError(head + config::quote_value(*text) +
                        " is not valid; valid values: " + join_choices(spec.choices));
    }
    std::optional<double> value = config::numeric_value(spec, hp);
    if (value && !spec.range.contains(*value)) {
      throw ConfigError(head + config::format_value(spec, hp) + " is out of range (must be " +
                        spec.range.describe() + ")");
    }
  }
}

// task_index names one of worker_hosts.
void validate_task_index(const HParams& hp) {
  int64_t hosts = 0;
  for (std::string_view rest = hp.worker_hosts; !rest.empty();) {
    size_t comma = rest.find(',');
    if (!config::trim(rest.substr(0, comma)).empty()) ++hosts;
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  if (hosts > 0 && hp.task_index >= hosts) {
    throw ConfigError(prefix(hp, "task_index") + "task_index: " + std::to_string(hp.task_index) +
                      " is out of range (must be < " + std::to_string(hosts) +
                      ", the number of worker_hosts)");
  }
}

// Keys that exclude or need each other.
void validate_combinations(const HParams& hp) {
  if (hp.warmup_epochs && hp.warmup_steps > 0) {
    throw ConfigError(
        prefix(hp, "warmup_epochs") + "warmup_epochs: cannot be combined with warmup_steps " +
        std::to_string(hp.warmup_steps) + " (" + hp.where("warmup_steps") + "); set one of them");
  }
  // A horizon derived from num_epochs is known once the dataset is (the
  // trainer checks it then, optim::schedule_from_hparams).
  if (hp.learning_rate_decay_type == "cosine" && !stop_from_num_epochs(hp) &&
      hp.stop_at_step <= hp.warmup_steps) {
    throw ConfigError(prefix(hp, "learning_rate_decay_type") +
                      "learning_rate_decay_type: 'cosine' needs stop_at_step (" +
                      std::to_string(hp.stop_at_step) + ") > warmup_steps (" +
                      std::to_string(hp.warmup_steps) + ")");
  }
  if (hp.synthetic_device_inputs && hp.dataset_name != "mock") {
    throw ConfigError(prefix(hp, "synthetic_device_inputs") +
                      "synthetic_device_inputs: needs dataset_name=mock (it replaces the "
                      "input pipeline with random images), not " +
                      config::quote_value(hp.dataset_name));
  }
  if (hp.task_type == "finetune" && hp.model_dir.empty() && hp.checkpoint_path.empty()) {
    throw ConfigError(prefix(hp, "task_type") +
                      "task_type: 'finetune' needs model_dir (with "
                      "ckpt_file_name) or checkpoint_path");
  }
  if (hp.num_epochs_per_decay && !hp.decay_scheme.empty()) {
    throw ConfigError(prefix(hp, "num_epochs_per_decay") +
                      "num_epochs_per_decay: cannot be combined with "
                      "decay_scheme " +
                      config::quote_value(hp.decay_scheme) + "; set one of them");
  }
}

// Decided at evaluations during training: without them, never.
void validate_evaluation_keys(const HParams& hp) {
  const std::pair<const char*, bool> by_evaluation[] = {
      {"stop_at_accuracy", hp.stop_at_accuracy.has_value()},
      {"early_stopping_patience", hp.early_stopping_patience > 0},
      {"keep_best_checkpoints", hp.keep_best_checkpoints > 0}};
  for (const auto& [key, set] : by_evaluation) {
    if (set && hp.eval_every_n_iters <= 0) {
      throw ConfigError(prefix(hp, key) + key +
                        ": needs evaluation during training: set eval_every_n_iters "
                        "(e.g. the steps of one epoch)");
    }
  }
}

}  // namespace

void validate(const HParams& hp) {
  validate_each_key(hp);
  validate_task_index(hp);
  validate_combinations(hp);
  validate_evaluation_keys(hp);
}

std::string format_help(const std::string& program, const std::string& usage) {
  std::string out = "usage: " + program + " " + usage + "\n\n";
  append_wrapped(
      "Hyperparameters come from the --config file (one key=value a line, # "
      "comments) and from --KEY=VALUE flags; the command line wins. Values "
      "are Python-style: True/False, None, numbers, strings (quotes "
      "optional), comma-separated lists. See docs/hyperparameters.md.",
      0, 0, &out);
  out +=
      "\nGeneral flags:\n"
      "  --config FILE     hyperparameter file\n"
      "  --help, -h        print this help and exit\n"
      "  --version         print the version and exit\n"
      "  --dry_run         resolve and print the configuration, build, exit\n"
      "  --print_cluster   print the resolved cluster and where it came from\n"
      "  --KEY VALUE       same as --KEY=VALUE; a bare --KEY sets a bool key\n"
      "  --noKEY           sets the bool KEY to False\n";
  for (config::Group group : config::all_groups()) {
    out += std::string("\n") + config::group_title(group) + ":\n";
    for (const KeySpec& spec : config::key_table()) {
      if (spec.group != group) continue;
      std::string head = "--" + std::string(spec.name) + " (" + config::type_name(spec) +
                         "; default: " + default_text(spec) + ")";
      if (spec.ignored()) head += " (ignored)";
      append_wrapped(head, 2, 6, &out);
      append_wrapped(long_help(spec), 6, 6, &out);
    }
  }
  out += "\nAliases (accepted with a warning):\n";
  for (const config::Alias& entry : config::alias_table()) {
    out += "  --" + std::string(entry.alias) + " -> --" + entry.canonical + "\n";
  }
  return out;
}

std::string format_hparams(const HParams& hp) {
  std::string out =
      "# FastNN-C++ hyperparameters; repeat the run with --config on this "
      "file.\n"
      "# A value that differs from the default is followed by the default.\n"
      "# Keys marked (ignored) are accepted for FastNN compatibility only.\n";
  const HParams defaults;
  for (config::Group g : config::all_groups()) {
    out += std::string("\n# --- ") + config::group_title(g) + " ---\n";
    for (const KeySpec& spec : config::key_table()) {
      if (spec.group != g) continue;
      std::string line = std::string(spec.name) + "=" + config::format_value(spec, hp);
      std::string note;
      if (spec.ignored()) note = "(ignored)";
      if (!config::same_value(spec, hp, defaults)) {
        note += (note.empty() ? "" : " ") + std::string("default: ") +
                config::format_value(spec, defaults);
      }
      out += line + (note.empty() ? "" : "  # " + note) + "\n";
    }
  }
  return out;
}

std::string format_hparams_markdown() {
  std::string out;
  for (config::Group g : config::all_groups()) {
    out += std::string("### ") + config::group_title(g) + "\n\n" +
           "| key | type | default | meaning |\n|---|---|---|---|\n";
    for (const KeySpec& spec : config::key_table()) {
      if (spec.group != g) continue;
      std::string value = config::format_value(spec, HParams());
      std::string def = "`" + value + "`";
      if (spec.default_note) def += std::string(" (") + spec.default_note + ")";
      std::string meaning = (spec.ignored() ? "**Ignored.** " : "") + long_help(spec);
      out += "| `" + std::string(spec.name) + "` | " + config::type_name(spec) + " | " + def +
             " | " + meaning + " |\n";
    }
    out += "\n";
  }
  out += "### Aliases\n\n| alias | canonical key |\n|---|---|\n";
  for (const config::Alias& a : config::alias_table()) {
    out += "| `" + std::string(a.alias) + "` | `" + a.canonical + "` |\n";
  }
  return out;
}

std::string closest_key(const std::string& key) { return closest(key, {}); }

bool stop_from_num_epochs(const HParams& hp) {
  return hp.sources.count("num_epochs") && !hp.sources.count("stop_at_step");
}

}  // namespace fastnn
