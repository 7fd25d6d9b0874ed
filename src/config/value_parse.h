// Python-style scalar values as FastNN hyperparameter files write them,
// and the string helpers that go with them. Internal to FastNN (config,
// dist and train use it); not part of include/fastnn.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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
/// single quotes (empty, "None", '#', quotes or outer whitespace).
std::string quote_if_needed(const std::string& s);

}  // namespace fastnn::config
