// The edge of every hparams-driven binary: parses the command line, prints
// help/version/warnings, runs the body, and maps exceptions to exit codes.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "fastnn/hparams.h"
#include "src/log/failure.h"

namespace fastnn::train {

/// Runs `body` with the loaded hyperparameters; returns the exit code.
/// `extra_keys`: the tool's own --KEY=VALUE flags (LoadResult::extras).
int tool_main(int argc, char** argv, const std::string& program, const std::string& usage,
              const std::function<int(LoadResult&)>& body,
              const std::vector<std::string>& extra_keys = {});

/// What tool_main reports for `e`: LibTorch's errors (out of memory 7,
/// others 1) and a process's thread limit (2) in front of failure_of.
Failure tool_failure_of(const std::exception_ptr& e);

}  // namespace fastnn::train
