// The library's console output, aware of the process's place in the job.
// Each line is written whole (one write, then flushed), so the lines of
// concurrent workers sharing a terminal or a log file do not interleave.
//
//   log::info() << "Restored " << path;     // every rank, "[rank r] " prefix
//   log::chief() << "config written";       // rank 0 only
//   log::warning() << "no train_dir";       // stderr, "warning: " prefix
//
// Without set_rank (a single process) there is no prefix.
#pragma once

#include <sstream>
#include <string>

namespace fastnn::log {

/// This process is `rank` of `world_size`; with world_size > 1 every line
/// gets a "[rank r] " prefix. Default: rank 0 of 1.
void set_rank(int rank, int world_size);

/// One line, written when it goes out of scope ('\n' is added).
class Line {
 public:
  enum class Sink { kStdout, kStderr, kNone };
  Line(Sink sink, const char* tag) : sink_(sink), tag_(tag) {}
  Line(const Line&) = delete;  // returned by value through C++17 elision
  Line& operator=(const Line&) = delete;
  ~Line();

  template <typename T>
  Line& operator<<(const T& value) {
    if (sink_ != Sink::kNone) os_ << value;
    return *this;
  }

 private:
  Sink sink_;
  const char* tag_;
  std::ostringstream os_;
};

/// Standard output, on every rank.
Line info();
/// Standard output, on rank 0 only (what every rank would print alike).
Line chief();
/// Standard error, "warning: ...", on every rank.
Line warning();

}  // namespace fastnn::log
