// The sweep's search space (SMAC's PCS syntax): bad input is a ConfigError.
#include <cstdint>
#include <string>

#include "fastnn/errors.h"
#include "src/sweep/search_space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fastnn::sweep::parse_pcs(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const fastnn::ConfigError&) {
  }
  return 0;
}
