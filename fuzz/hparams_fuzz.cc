// The hyperparameter file: any bytes as --config FILE. Bad input must be a
// ConfigError (exit 2), nothing else.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/fastnn-fuzz-" + std::to_string(getpid()) + ".cfg";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const char* argv[] = {"fuzz", "--config", path.c_str()};
  try {
    fastnn::load_hparams(3, argv);
  } catch (const fastnn::ConfigError&) {
  }
  return 0;
}
