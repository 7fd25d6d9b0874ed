// Fault injection for tests and the fault scripts (tests/faults/), in one
// place: FASTNN_FAILPOINTS="name[=value];name[=value]..." in the
// environment arms the named failpoints for the process (read once).
// Training code asks only through the functions below; with the variable
// unset every one of them is inert. The names (docs/reliability.md):
//   inf_grad_steps=S1,S2,...  fill the first variable's gradient with Inf at
//                             those global steps, after the gradients are
//                             final and before the loss scaler reads them
//   oom_at_step=N             the step run at global step N throws
//                             c10::OutOfMemoryError, as LibTorch's
//                             allocator does, on any device
//   read_on_demand            a CPU run reads its step numbers only on the
//                             steps that need them, as a GPU run does
// An unknown name or a malformed value is an error naming it (a fault test
// that silently injects nothing would pass for the wrong reason).
#pragma once

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/optim/optimizers.h"

namespace fastnn::train::failpoints {

/// The armed failpoints, name -> value ("" for a bare name), parsed from
/// `spec` (FASTNN_FAILPOINTS' syntax). Throws std::invalid_argument on an
/// unknown name.
inline std::map<std::string, std::string> parse(const std::string& spec) {
  static const char* const kNames[] = {"inf_grad_steps", "oom_at_step", "read_on_demand"};
  std::map<std::string, std::string> armed;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) {
      throw std::invalid_argument("FASTNN_FAILPOINTS: unknown failpoint '" + name + "'");
    }
    armed[name] = eq == std::string::npos ? "" : item.substr(eq + 1);
  }
  return armed;
}

/// This process's armed failpoints.
inline const std::map<std::string, std::string>& armed() {
  static const std::map<std::string, std::string> points = [] {
    const char* spec = std::getenv("FASTNN_FAILPOINTS");
    return spec ? parse(spec) : std::map<std::string, std::string>{};
  }();
  return points;
}

/// `value` of failpoint `name` as step numbers (S1,S2,...). Throws
/// std::invalid_argument on anything else.
inline std::vector<int64_t> parse_steps(const std::string& name, const std::string& value) {
  std::vector<int64_t> steps;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t step = -1;
    try {
      step = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || step < 0) {
      throw std::invalid_argument("FASTNN_FAILPOINTS: " + name + ": '" + item +
                                  "' is not a step number");
    }
    steps.push_back(step);
  }
  if (steps.empty()) throw std::invalid_argument("FASTNN_FAILPOINTS: " + name + ": no step");
  return steps;
}

/// Failpoint `name`'s steps; empty when it is not armed.
inline std::vector<int64_t> steps_of(const std::string& name) {
  const auto it = armed().find(name);
  if (it == armed().end()) return {};
  return parse_steps(name, it->second);
}

/// read_on_demand is armed.
inline bool read_on_demand() { return armed().count("read_on_demand") != 0; }

/// A fault run on the final gradients of a step, before the loss scaler
/// looks at them; empty when none is armed.
using GradientFault = std::function<void(int64_t step, const std::vector<optim::Variable>& vars)>;

/// inf_grad_steps' fault.
inline GradientFault gradient_fault() {
  const std::vector<int64_t> steps = steps_of("inf_grad_steps");
  if (steps.empty()) return {};
  return [steps](int64_t step, const std::vector<optim::Variable>& vars) {
    if (std::find(steps.begin(), steps.end(), step) == steps.end()) return;
    at::NoGradGuard no_grad;
    vars.front().var.mutable_grad().fill_(std::numeric_limits<float>::infinity());
  };
}

/// oom_at_step's step; nullopt when not armed.
inline std::optional<int64_t> out_of_memory_step() {
  const std::vector<int64_t> steps = steps_of("oom_at_step");
  if (steps.empty()) return std::nullopt;
  return steps.front();
}

/// oom_at_step's error: a c10::OutOfMemoryError saying it was injected.
[[noreturn]] inline void throw_out_of_memory(int64_t step) {
  C10_THROW_ERROR(OutOfMemoryError,
                  "CUDA out of memory. Tried to allocate 2.00 GiB (injected by "
                  "FASTNN_FAILPOINTS oom_at_step at global step " +
                      std::to_string(step) + ")");
}

}  // namespace fastnn::train::failpoints
