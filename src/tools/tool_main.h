// The edge of every hparams-driven binary: parses the command line, prints
// help/version/warnings, runs the body, and maps exceptions to exit codes.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "fastnn/hparams.h"

namespace fastnn::train {

/// Runs `body` with the loaded hyperparameters; returns the exit code.
/// `extra_keys`: the tool's own --KEY=VALUE flags (LoadResult::extras).
int tool_main(int argc, char** argv, const std::string& program, const std::string& usage,
              const std::function<int(LoadResult&)>& body,
              const std::vector<std::string>& extra_keys = {});

/// The exit code tool_main gives `e` (2 config, 3 data, 4 diverged,
/// 5 distributed, 7 out of memory, 1 anything else).
int exit_code_of(const std::exception_ptr& e);

}  // namespace fastnn::train
