#include "src/config/value_parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

namespace fastnn::config {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Drops one leading '+' (from_chars does not accept it); "+-1" stays junk.
std::string_view drop_plus(std::string_view s) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') {
    s.remove_prefix(1);
  }
  return s;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_quoted(std::string_view s) {
  return s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front();
}

std::string_view strip_quotes(std::string_view s) {
  return is_quoted(s) ? s.substr(1, s.size() - 2) : s;
}

bool parse_bool(std::string_view s, bool* out) {
  if (s == "True" || s == "true" || s == "1") {
    *out = true;
    return true;
  }
  if (s == "False" || s == "false" || s == "0") {
    *out = false;
    return true;
  }
  return false;
}

NumberStatus parse_int(std::string_view s, int64_t* out) {
  s = drop_plus(s);
  if (s.empty()) return NumberStatus::kNotANumber;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (end != s.data() + s.size()) return NumberStatus::kNotANumber;
  if (ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (ec != std::errc()) return NumberStatus::kNotANumber;
  *out = v;
  return NumberStatus::kOk;
}

NumberStatus parse_double(std::string_view s, double* out) {
  s = drop_plus(s);
  if (s.empty()) return NumberStatus::kNotANumber;
  // from_chars accepts "inf", "nan" and "infinity"; Python-style files write
  // finite decimals only, so any letter other than an exponent is junk.
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!ok) return NumberStatus::kNotANumber;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (end != s.data() + s.size()) return NumberStatus::kNotANumber;
  if (ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (ec != std::errc()) return NumberStatus::kNotANumber;
  if (!std::isfinite(v)) return NumberStatus::kOutOfRange;
  *out = v;
  return NumberStatus::kOk;
}

std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string format_bool(bool v) { return v ? "True" : "False"; }

namespace {

// True when a value in quotes `q` would end at one of its own quote
// characters: the reader closes at a quote followed by whitespace and '#'.
bool closes_early(const std::string& s, char q) {
  for (size_t j = s.find(q); j != std::string::npos; j = s.find(q, j + 1)) {
    size_t k = j + 1;
    while (k < s.size() && is_space(s[k])) ++k;
    if (k > j + 1 && k < s.size() && s[k] == '#') return true;
  }
  return false;
}

}  // namespace

std::string unwritable_reason(const std::string& s) {
  if (s.find('\n') != std::string::npos) return "holds a line feed";
  if (s.find('\0') != std::string::npos) return "holds a NUL byte";
  if (closes_early(s, '\'') && closes_early(s, '"'))
    return "holds both ' and \" followed by whitespace and '#'";
  if (s.size() > kMaxValueBytes)
    return "is longer than " + std::to_string(kMaxValueBytes) + " bytes";
  return "";
}

std::string quote_if_needed(const std::string& s) {
  bool needs = s.empty() || s == "None" || s.find('#') != std::string::npos || s.front() == '\'' ||
               s.front() == '"' || trim(s) != s;
  if (!needs) return s;
  const char q = closes_early(s, '\'') ? '"' : '\'';
  return q + s + q;
}

}  // namespace fastnn::config

namespace fastnn {

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string_view item = config::trim(std::string_view(list).substr(start, comma - start));
    if (!item.empty()) items.emplace_back(item);
    start = comma + 1;
  }
  return items;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace fastnn
