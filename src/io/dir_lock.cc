#include "src/io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"

namespace fastnn::io {
namespace fs = std::filesystem;

int lock_directory(const std::string& dir, const std::string& key, const std::string& holder) {
  const std::string shown = config::quote_value(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw ConfigError(key + ": cannot create or use directory " + shown + ": " +
                      (ec ? ec.message() : "not a directory"));
  }
  const std::string lock_path = (fs::path(dir) / ".lock").string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw ConfigError(key + ": cannot write in " + shown + ": " + std::strerror(errno));
  }
  // An evaluation loop probes a train_dir's lock with a shared one for a
  // moment (trainer_running): a few retries over half a second ride that out.
  int err = 0;
  for (int tries = 0; tries < 10; ++tries) {
    err = ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
    if (err != EWOULDBLOCK) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (err != 0) {
    ::close(fd);
    if (err == EWOULDBLOCK) {
      throw ConfigError(key + " " + shown + " is in use by another " + holder + " (it holds " +
                        lock_path + "); use another " + key + ", or stop that process first");
    }
    throw ConfigError(key + ": cannot lock " + lock_path + ": " + std::strerror(err));
  }
  return fd;
}

}  // namespace fastnn::io
