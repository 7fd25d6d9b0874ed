// Python-style scalar values as FastNN hyperparameter files write them,
// and the string helpers that go with them. Internal to FastNN (config,
// dist and train use it); not part of include/fastnn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::config {

/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string_view trim(std::string_view s);

/// `s` with ASCII letters in lower case (no locale).
std::string lower(std::string s);

/// True when `s` is wrapped in a matching pair of '...' or "...".
bool is_quoted(std::string_view s);

/// `s` without its outer matching quotes, if it has them.
std::string_view strip_quotes(std::string_view s);

/// True/False/true/false/1/0. False for anything else.
bool parse_bool(std::string_view s, bool* out);

/// Result of parsing a number.
enum class NumberStatus { kOk, kNotANumber, kOutOfRange };

/// A decimal integer with an optional sign; no fraction, exponent or junk.
NumberStatus parse_int(std::string_view s, int64_t* out);

/// A finite decimal float ("0.01", "1e-4", "-3"); the whole token must be
/// used. nan, inf and hexadecimal floats are rejected. Locale-independent.
NumberStatus parse_double(std::string_view s, double* out);

/// The shortest text that parses back to exactly `v`, Python-like:
/// 0.01, 1e-05, 1.0 (always with '.' or an exponent).
std::string format_double(double v);

/// "True" or "False".
std::string format_bool(bool v);

/// `s` as a value token that reads back as `s`: bare when safe, otherwise in
/// quotes (empty, "None", '#', quotes or outer whitespace): single quotes,
/// or double quotes when a ' in `s` is followed by whitespace and '#'.
/// REQUIRES: unwritable_reason(s) is empty.
std::string quote_if_needed(const std::string& s);

/// The longest value a config file line holds with room for its key and
/// note (the reader refuses lines over 64 KiB).
inline constexpr size_t kMaxValueBytes = 60 * 1024;

/// Why no key=value line can hold `s` ("holds a line feed", a NUL byte,
/// both quote characters followed by whitespace and '#', or more than
/// kMaxValueBytes bytes); "" when one can.
std::string unwritable_reason(const std::string& s);

/// The most bytes of a value that a message shows (quote_value()).
inline constexpr size_t kMaxQuotedBytes = 100;

/// `s` in single quotes for an error or warning: at most its first
/// kMaxQuotedBytes bytes (cut at a UTF-8 character boundary), then
/// "... (N bytes)" after the closing quote, so a 10 MB value is never echoed;
/// control bytes as \n, \r, \t or \xHH, so a message stays one line.
/// Every message that names a value uses it. Inline so that binaries that do
/// not link fastnn_config (convert_dataset) can use it too.
inline std::string quote_value(std::string_view s) {
  size_t cut = s.size();
  if (s.size() > kMaxQuotedBytes) {
    cut = kMaxQuotedBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out = "'";
  for (char c : s.substr(0, cut)) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7F) {
      out += c;
    } else {
      const char* hex = "0123456789abcdef";
      out += c == '\n'   ? std::string("\\n")
             : c == '\r' ? std::string("\\r")
             : c == '\t' ? std::string("\\t")
                         : std::string("\\x") + hex[b >> 4] + hex[b & 15];
    }
  }
  out += "'";
  if (cut < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

/// The bytes of the UTF-8 character that starts at s[i] (1 for ASCII), or
/// 0 where s[i] starts none (a stray continuation byte, an overlong form, a
/// surrogate, past U+10FFFF, a sequence cut short). REQUIRES: i < s.size().
inline size_t utf8_char_bytes(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const size_t n = c >= 0xf0 && c < 0xf5   ? 4
                   : c >= 0xe0 && c < 0xf0 ? 3
                   : c >= 0xc2 && c < 0xe0 ? 2
                                           : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t cp = n == 4 ? c & 0x07u : n == 3 ? c & 0x0fu : c & 0x1fu;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3fu);
  }
  const uint32_t least = n == 4 ? 0x10000 : n == 3 ? 0x800 : 0x80;
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return 0;
  return n;
}

/// True when `s` is valid UTF-8 throughout.
inline bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_char_bytes(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace fastnn::config

namespace fastnn {

/// Splits a comma-separated list value (hooks, scopes, files), trimming
/// blanks around items and dropping empty ones.
std::vector<std::string> split_list(const std::string& list);

/// "a, b, c": names for "valid values" messages.
std::string join_list(const std::vector<std::string>& items);

/// The `name` of each row of a name table (models, datasets, optimizers,
/// preprocessing, hooks), in the table's order.
template <class Rows>
std::vector<std::string> names_of(const Rows& rows) {
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row.name);
  return names;
}

}  // namespace fastnn
