// The hyperparameter file: any bytes as --config FILE. Bad input must be a
// ConfigError (exit 2), nothing else.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"

namespace {

// The file each input is written to, one per process, removed when the
// process exits normally (a crash leaves it: the input that crashed).
const std::string& config_path() {
  // Never destroyed: the exit handler below runs after static destructors
  // registered later.
  static const std::string* path = [] {
    auto* p = new std::string("/tmp/fastnn-fuzz-" + std::to_string(getpid()) + ".cfg");
    std::atexit([] { std::remove(config_path().c_str()); });
    return p;
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = config_path();
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
