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
    // A condition: "child | parent in {v1, v2}".
    if (const size_t bar = line.find('|'); bar != std::string::npos) {
      Condition c;
      c.child = std::string(config::trim(std::string_view(line).substr(0, bar)));
      std::istringstream rest(line.substr(bar + 1));
      std::string in_word;
      rest >> c.parent >> in_word;
      std::string values;
      size_t pos = bar + 1 + static_cast<size_t>(rest.tellg());
      if (in_word != "in" || !take_group(line, pos, '{', '}', values)) {
        fail(where, "a condition reads 'child | parent in {value, ...}'");
      }
      c.values = split_list(values);
      if (!names.count(c.child)) fail(where, "condition on unknown parameter '" + c.child + "'");
      if (!names.count(c.parent)) fail(where, "condition on unknown parameter '" + c.parent + "'");
      space.conditions.push_back(std::move(c));
      continue;
    }
    Param p;
    std::string kind;
    {
      std::istringstream words(line);
      words >> p.name >> kind;
    }
    if (kind.empty()) fail(where, "'" + p.name + "' needs a type: real, integer or categorical");
    if (names.count(p.name)) fail(where, "parameter '" + p.name + "' is defined twice");
    size_t pos = line.find(kind, p.name.size()) + kind.size();
    std::string range, def;
    if (kind == "real" || kind == "integer") {
      p.kind = kind == "real" ? Param::Kind::kReal : Param::Kind::kInteger;
      if (!take_group(line, pos, '[', ']', range)) {
        fail(where, "'" + p.name + "': " + kind + " needs a range [lo, hi]");
      }
      const auto bounds = split_list(range);
      if (bounds.size() != 2) fail(where, "'" + p.name + "': the range is [lo, hi]");
      p.lo = number(bounds[0], where);
      p.hi = number(bounds[1], where);
      if (!(p.lo < p.hi)) fail(where, "'" + p.name + "': lo must be below hi");
      if (p.kind == Param::Kind::kInteger &&
          (p.lo != std::floor(p.lo) || p.hi != std::floor(p.hi))) {
        fail(where, "'" + p.name + "': an integer range has integer bounds");
      }
    } else if (kind == "categorical") {
      p.kind = Param::Kind::kCategorical;
      if (!take_group(line, pos, '{', '}', range)) {
        fail(where, "'" + p.name + "': categorical needs {choice, ...}");
      }
      p.choices = split_list(range);
      for (const auto& c : p.choices) {
        if (c.empty()) fail(where, "'" + p.name + "': an empty choice");
      }
    } else {
      fail(where, "'" + p.name + "': unknown type '" + kind + "' (real, integer or categorical)");
    }
    if (take_group(line, pos, '[', ']', def)) p.default_value = std::string(config::trim(def));
    const std::string tail(config::trim(std::string_view(line).substr(std::min(pos, line.size()))));
    if (tail == "log") {
      if (p.kind == Param::Kind::kCategorical) fail(where, "'" + p.name + "': log on categorical");
      if (p.lo <= 0) fail(where, "'" + p.name + "': log needs lo > 0");
      p.log = true;
    } else if (!tail.empty()) {
      fail(where, "'" + p.name + "': unexpected '" + tail + "'");
    }
    if (!p.default_value.empty()) {
      if (p.kind == Param::Kind::kCategorical) {
        if (std::find(p.choices.begin(), p.choices.end(), p.default_value) == p.choices.end()) {
          fail(where, "'" + p.name + "': default '" + p.default_value + "' is not a choice");
        }
      } else {
        const double d = number(p.default_value, where);
        if (d < p.lo || d > p.hi) fail(where, "'" + p.name + "': default outside the range");
      }
    }
    names.insert(p.name);
    space.params.push_back(std::move(p));
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
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          cell += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          cell += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        cells.emplace_back(config::trim(cell));
        cell.clear();
      } else {
        cell += c;
      }
    }
    if (quoted) fail(source + ":" + std::to_string(line_no), "unterminated quote");
    cells.emplace_back(config::trim(cell));
    rows.push_back(std::move(cells));
    line_of.push_back(line_no);
  }
  if (rows.size() < 2) fail(source, "needs a header row and at least one trial");
  const auto& header = rows[0];
  for (size_t c = 0; c < header.size(); ++c) {
    const std::string where = source + ":" + std::to_string(line_of[0]);
    if (header[c].empty()) fail(where, "an empty column name");
    if (std::find(header.begin(), header.begin() + c, header[c]) != header.begin() + c) {
      fail(where, "column '" + header[c] + "' appears twice");
    }
  }
  std::vector<Assignment> out;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != header.size()) {
      fail(source + ":" + std::to_string(line_of[r]),
           std::to_string(rows[r].size()) + " values for " + std::to_string(header.size()) +
               " columns");
    }
    Assignment a;
    for (size_t c = 0; c < header.size(); ++c) {
      if (!rows[r][c].empty()) a[header[c]] = rows[r][c];
    }
    out.push_back(std::move(a));
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

std::vector<Assignment> random_trials(const SearchSpace& space, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Assignment> out;
  for (int t = 0; t < n; ++t) {
    Assignment a;
    for (const auto& p : space.params) {
      const double u = unit(rng);  // one draw per parameter, active or not
      switch (p.kind) {
        case Param::Kind::kCategorical:
          a[p.name] =
              p.choices[std::min(p.choices.size() - 1, static_cast<size_t>(u * p.choices.size()))];
          break;
        case Param::Kind::kReal:
          a[p.name] =
              format_real(p.log ? std::exp(std::log(p.lo) + u * (std::log(p.hi) - std::log(p.lo)))
                                : p.lo + u * (p.hi - p.lo));
          break;
        case Param::Kind::kInteger: {
          double v;
          if (p.log) {
            v = std::exp(std::log(p.lo) + u * (std::log(p.hi + 1) - std::log(p.lo)));
            v = std::floor(v);
          } else {
            v = p.lo + std::floor(u * (p.hi - p.lo + 1));
          }
          a[p.name] = format_integer(std::clamp(v, p.lo, p.hi));
          break;
        }
      }
    }
    out.push_back(active_only(space, std::move(a)));
  }
  return out;
}

std::vector<Assignment> grid_trials(const SearchSpace& space, int points) {
  points = std::max(points, 2);
  std::vector<std::vector<std::string>> axes;
  for (const auto& p : space.params) {
    std::vector<std::string> values;
    if (p.kind == Param::Kind::kCategorical) {
      values = p.choices;
    } else if (p.kind == Param::Kind::kInteger && p.hi - p.lo + 1 <= points && !p.log) {
      for (double v = p.lo; v <= p.hi; ++v) values.push_back(format_integer(v));
    } else {
      for (int i = 0; i < points; ++i) {
        const double f = static_cast<double>(i) / (points - 1);
        const double v = p.log ? std::exp(std::log(p.lo) + f * (std::log(p.hi) - std::log(p.lo)))
                               : p.lo + f * (p.hi - p.lo);
        const std::string s = format_value(p, v);
        if (values.empty() || values.back() != s) values.push_back(s);
      }
    }
    axes.push_back(std::move(values));
  }
  std::vector<Assignment> out;
  std::set<Assignment> seen;
  std::vector<size_t> idx(axes.size(), 0);
  for (;;) {
    Assignment a;
    for (size_t i = 0; i < axes.size(); ++i) a[space.params[i].name] = axes[i][idx[i]];
    a = active_only(space, std::move(a));
    if (seen.insert(a).second) out.push_back(a);
    size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++idx[k] < axes[k].size()) break;
      idx[k] = 0;
      if (k == 0) return out;
    }
    if (axes.empty()) return out;
  }
}

}  // namespace fastnn::sweep
