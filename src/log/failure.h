// How a binary ends on an exception: one line on stderr naming the program
// and the kind of failure, and the exit code include/fastnn/errors.h gives
// that kind (README.md, "Exit codes"). No LibTorch: the converters, the
// sweep and the control plane use it as they are; tool_main adds LibTorch's
// own errors and the thread limit in front of it.
#pragma once

#include <exception>
#include <string>

namespace fastnn {

/// A failure as the process reports it.
struct Failure {
  int exit_code;
  /// "error: ", "data error: ", "training diverged: ", "distributed
  /// failure: ", "" (out of memory: the message says it), "internal error: ".
  const char* kind;
  std::string what;
};

/// What `e` is: ConfigError exit 2, DataError 3, DivergedError 4,
/// DistributedError 5, OutOfMemoryError 7, anything else 1.
Failure failure_of(const std::exception_ptr& e);

/// Prints "PROGRAM: KIND WHAT" on stderr; returns the exit code.
int report_failure(const std::string& program, const Failure& failure);

}  // namespace fastnn
