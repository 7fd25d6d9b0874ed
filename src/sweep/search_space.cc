#include "src/sweep/search_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <sstream>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"

namespace fastnn::sweep {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ConfigError(where + ": " + what);
}

// Splits "a, b ,c" on commas, trimming each item.
std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    out.emplace_back(config::trim(s.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// The text between `open` and its `close` at or after `pos`; pos moves past it.
bool take_group(const std::string& line, size_t& pos, char open, char close, std::string& out) {
  while (pos < line.size() && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
  if (pos >= line.size() || line[pos] != open) return false;
  const size_t end = line.find(close, pos);
  if (end == std::string::npos) return false;
  out = line.substr(pos + 1, end - pos - 1);
  pos = end + 1;
  return true;
}

double number(const std::string& text, const std::string& where) {
  double v = 0;
  if (config::parse_double(config::trim(text), &v) != config::NumberStatus::kOk) {
    fail(where, "'" + config::quote_value(text) + "' is not a number");
  }
  return v;
}

std::string format_integer(double v) {
  return std::to_string(static_cast<long long>(std::llround(v)));
}

std::string format_value(const Param& p, double v) {
  return p.kind == Param::Kind::kInteger ? format_integer(v) : format_real(v);
}

// `text` without a UTF-8 byte-order mark at its start (Excel, Notepad);
// a NUL byte (UTF-16, a binary file) is an error.
std::string utf8_text(const std::string& text, const std::string& source) {
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    fail(source, "a NUL byte at offset " + std::to_string(nul) +
                     ": not UTF-8 text (a UTF-16 file? save it as UTF-8)");
  }
  return text.rfind("\xEF\xBB\xBF", 0) == 0 ? text.substr(3) : text;
}

}  // namespace

std::string format_real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

namespace {

// A condition line: "child | parent in {v1, v2}" (bar: the '|').
Condition parse_condition(const std::string& line, size_t bar, const std::set<std::string>& names,
                          const std::string& where) {
  Condition condition;
  condition.child = std::string(config::trim(std::string_view(line).substr(0, bar)));
  std::istringstream rest(line.substr(bar + 1));
  std::string in_word;
  rest >> condition.parent >> in_word;
  std::string values;
  size_t pos = bar + 1 + static_cast<size_t>(rest.tellg());
  if (in_word != "in" || !take_group(line, pos, '{', '}', values)) {
    fail(where, "a condition reads 'child | parent in {value, ...}'");
  }
  condition.values = split_list(values);
  if (!names.count(condition.child))
    fail(where, "condition on unknown parameter '" + condition.child + "'");
  if (!names.count(condition.parent))
    fail(where, "condition on unknown parameter '" + condition.parent + "'");
  return condition;
}

// The "[lo, hi]" of a real or integer parameter, or the "{choice, ...}" of
// a categorical one, read from `pos` on.
void parse_domain(const std::string& line, const std::string& kind, size_t& pos, Param& param,
                  const std::string& where) {
  std::string range;
  if (kind == "real" || kind == "integer") {
    param.kind = kind == "real" ? Param::Kind::kReal : Param::Kind::kInteger;
    if (!take_group(line, pos, '[', ']', range)) {
      fail(where, "'" + param.name + "': " + kind + " needs a range [lo, hi]");
    }
    const auto bounds = split_list(range);
    if (bounds.size() != 2) fail(where, "'" + param.name + "': the range is [lo, hi]");
    param.lo = number(bounds[0], where);
    param.hi = number(bounds[1], where);
    if (!(param.lo < param.hi)) fail(where, "'" + param.name + "': lo must be below hi");
    if (param.kind == Param::Kind::kInteger &&
        (param.lo != std::floor(param.lo) || param.hi != std::floor(param.hi))) {
      fail(where, "'" + param.name + "': an integer range has integer bounds");
    }
  } else if (kind == "categorical") {
    param.kind = Param::Kind::kCategorical;
    if (!take_group(line, pos, '{', '}', range)) {
      fail(where, "'" + param.name + "': categorical needs {choice, ...}");
    }
    param.choices = split_list(range);
    for (const auto& choice : param.choices) {
      if (choice.empty()) fail(where, "'" + param.name + "': an empty choice");
    }
  } else {
    fail(where, "'" + param.name + "': unknown type '" + kind + "' (real, integer or categorical)");
  }
}

// What follows the domain: an optional "[default]" and "log".
void parse_default_and_log(const std::string& line, size_t pos, Param& param,
                           const std::string& where) {
  std::string def;
  if (take_group(line, pos, '[', ']', def)) param.default_value = std::string(config::trim(def));
  const std::string tail(config::trim(std::string_view(line).substr(std::min(pos, line.size()))));
  if (tail == "log") {
    if (param.kind == Param::Kind::kCategorical)
      fail(where, "'" + param.name + "': log on categorical");
    if (param.lo <= 0) fail(where, "'" + param.name + "': log needs lo > 0");
    param.log = true;
  } else if (!tail.empty()) {
    fail(where, "'" + param.name + "': unexpected '" + tail + "'");
  }
  if (param.default_value.empty()) return;
  if (param.kind == Param::Kind::kCategorical) {
    if (std::find(param.choices.begin(), param.choices.end(), param.default_value) ==
        param.choices.end()) {
      fail(where, "'" + param.name + "': default '" + param.default_value + "' is not a choice");
    }
  } else {
    const double parsed_default = number(param.default_value, where);
    if (parsed_default < param.lo || parsed_default > param.hi)
      fail(where, "'" + param.name + "': default outside the range");
  }
}

Param parse_param(const std::string& line, const std::set<std::string>& names,
                  const std::string& where) {
  Param param;
  std::string kind;
  {
    std::istringstream words(line);
    words >> param.name >> kind;
  }
  if (kind.empty()) fail(where, "'" + param.name + "' needs a type: real, integer or categorical");
  if (names.count(param.name)) fail(where, "parameter '" + param.name + "' is defined twice");
  size_t pos = line.find(kind, param.name.size()) + kind.size();
  parse_domain(line, kind, pos, param, where);
  parse_default_and_log(line, pos, param, where);
  return param;
}

// One CSV line's cells (RFC 4180 quotes), trimmed.
std::vector<std::string> csv_cells(const std::string& line, const std::string& where) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      cells.emplace_back(config::trim(cell));
      cell.clear();
    } else {
      cell += ch;
    }
  }
  if (quoted) fail(where, "unterminated quote");
  cells.emplace_back(config::trim(cell));
  return cells;
}

void check_header(const std::vector<std::string>& header, const std::string& where) {
  for (size_t column = 0; column < header.size(); ++column) {
    if (header[column].empty()) fail(where, "an empty column name");
    if (std::find(header.begin(), header.begin() + column, header[column]) !=
        header.begin() + column) {
      fail(where, "column '" + header[column] + "' appears twice");
    }
  }
}

}  // namespace

SearchSpace parse_pcs(const std::string& text, const std::string& source) {
  SearchSpace space;
  std::set<std::string> names;
  std::istringstream in(utf8_text(text, source));
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string where = source + ":" + std::to_string(line_no);
    std::string line = raw.substr(0, raw.find('#'));
    line = std::string(config::trim(line));
    if (line.empty()) continue;
    if (const size_t bar = line.find('|'); bar != std::string::npos) {
      space.conditions.push_back(parse_condition(line, bar, names, where));
      continue;
    }
    Param param = parse_param(line, names, where);
    names.insert(param.name);
    space.params.push_back(std::move(param));
  }
  if (space.params.empty()) fail(source, "no parameters");
  return space;
}

std::vector<Assignment> parse_trials_csv(const std::string& text, const std::string& source) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(utf8_text(text, source));
  std::string line;
  std::vector<int> line_of;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (config::trim(line).empty()) continue;
    rows.push_back(csv_cells(line, source + ":" + std::to_string(line_no)));
    line_of.push_back(line_no);
  }
  if (rows.size() < 2) fail(source, "needs a header row and at least one trial");
  const auto& header = rows[0];
  check_header(header, source + ":" + std::to_string(line_of[0]));
  std::vector<Assignment> out;
  for (size_t row = 1; row < rows.size(); ++row) {
    if (rows[row].size() != header.size()) {
      fail(source + ":" + std::to_string(line_of[row]),
           std::to_string(rows[row].size()) + " values for " + std::to_string(header.size()) +
               " columns");
    }
    Assignment assignment;
    for (size_t column = 0; column < header.size(); ++column) {
      if (!rows[row][column].empty()) assignment[header[column]] = rows[row][column];
    }
    out.push_back(std::move(assignment));
  }
  return out;
}

Assignment active_only(const SearchSpace& space, Assignment a) {
  // Conditions may chain (a child is itself a parent): repeat until stable.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& c : space.conditions) {
      if (!a.count(c.child)) continue;
      auto parent = a.find(c.parent);
      const bool on = parent != a.end() &&
                      std::find(c.values.begin(), c.values.end(), parent->second) != c.values.end();
      if (!on) {
        a.erase(c.child);
        changed = true;
      }
    }
  }
  return a;
}

std::vector<Assignment> random_trials(const SearchSpace& space, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Assignment> out;
  for (int trial = 0; trial < count; ++trial) {
    Assignment assignment;
    for (const auto& param : space.params) {
      const double draw = unit(rng);  // one draw per parameter, active or not
      switch (param.kind) {
        case Param::Kind::kCategorical:
          assignment[param.name] = param.choices[std::min(
              param.choices.size() - 1, static_cast<size_t>(draw * param.choices.size()))];
          break;
        case Param::Kind::kReal:
          assignment[param.name] = format_real(
              param.log
                  ? std::exp(std::log(param.lo) + draw * (std::log(param.hi) - std::log(param.lo)))
                  : param.lo + draw * (param.hi - param.lo));
          break;
        case Param::Kind::kInteger: {
          double value;
          if (param.log) {
            value =
                std::exp(std::log(param.lo) + draw * (std::log(param.hi + 1) - std::log(param.lo)));
            value = std::floor(value);
          } else {
            value = param.lo + std::floor(draw * (param.hi - param.lo + 1));
          }
          assignment[param.name] = format_integer(std::clamp(value, param.lo, param.hi));
          break;
        }
      }
    }
    out.push_back(active_only(space, std::move(assignment)));
  }
  return out;
}

std::vector<Assignment> grid_trials(const SearchSpace& space, int points) {
  points = std::max(points, 2);
  std::vector<std::vector<std::string>> axes;
  for (const auto& param : space.params) {
    std::vector<std::string> values;
    if (param.kind == Param::Kind::kCategorical) {
      values = param.choices;
    } else if (param.kind == Param::Kind::kInteger && param.hi - param.lo + 1 <= points &&
               !param.log) {
      for (double value = param.lo; value <= param.hi; ++value)
        values.push_back(format_integer(value));
    } else {
      for (int i = 0; i < points; ++i) {
        const double frac = static_cast<double>(i) / (points - 1);
        const double value =
            param.log
                ? std::exp(std::log(param.lo) + frac * (std::log(param.hi) - std::log(param.lo)))
                : param.lo + frac * (param.hi - param.lo);
        const std::string text = format_value(param, value);
        if (values.empty() || values.back() != text) values.push_back(text);
      }
    }
    axes.push_back(std::move(values));
  }
  std::vector<Assignment> out;
  std::set<Assignment> seen;
  std::vector<size_t> idx(axes.size(), 0);
  for (;;) {
    Assignment assignment;
    for (size_t i = 0; i < axes.size(); ++i) assignment[space.params[i].name] = axes[i][idx[i]];
    assignment = active_only(space, std::move(assignment));
    if (seen.insert(assignment).second) out.push_back(assignment);
    size_t axis = axes.size();
    while (axis > 0) {
      --axis;
      if (++idx[axis] < axes[axis].size()) break;
      idx[axis] = 0;
      if (axis == 0) return out;
    }
    if (axes.empty()) return out;
  }
}

}  // namespace fastnn::sweep
