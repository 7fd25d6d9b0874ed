// The value parser behind every key: numbers, booleans, quoting, lists.
#include <cstdint>
#include <string>
#include <string_view>

#include "fastnn/hparams.h"
#include "src/config/value_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  int64_t i = 0;
  double d = 0;
  bool b = false;
  fastnn::config::parse_int(s, &i);
  fastnn::config::parse_double(s, &d);
  fastnn::config::parse_bool(s, &b);
  fastnn::config::strip_quotes(fastnn::config::trim(s));
  fastnn::config::quote_if_needed(std::string(s));
  fastnn::split_list(std::string(s));
  return 0;
}
