// FASTNN_PROFILE_STEPS=FIRST:LAST — LibTorch's profiler (Kineto) around
// the training steps FIRST..LAST (global steps, both included): where a
// step's time goes, as a table in the log, beside PyTorch's
// torch.profiler for the peers (docs/performance.md, "Profiling a step").
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fastnn/hooks.h"

namespace fastnn::train {

struct ProfileSpan {
  int64_t first = 0;
  int64_t last = 0;
  /// FASTNN_PROFILE_TRACE: a Chrome trace of the span, when set.
  std::string trace_path;
  /// FASTNN_PROFILE_TOP (25): rows of the table.
  int top = 25;
};

struct ProfileTable;

/// The span FASTNN_PROFILE_STEPS asks for; nullopt when unset. Throws
/// ConfigError (exit 2) for a value that is not FIRST:LAST with
/// 1 <= FIRST <= LAST.
std::optional<ProfileSpan> profile_span_from_env();

/// One row of the table: what ran (a kernel on a GPU, an operator on the
/// CPU), how often and for how long in all over the span.
struct ProfileRow {
  std::string name;
  int64_t calls = 0;
  double total_ms = 0;
};

/// Rows by total time, longest first; `top` of them.
struct ProfileTable {
  std::string device_kind;  // "CUDA kernels" or "CPU operators (inclusive)"
  int64_t steps = 0;
  double wall_ms = 0;
  /// Sum over every row, not only the top ones (GPU: busy time, if the
  /// kernels never overlap).
  double total_ms = 0;
  std::vector<ProfileRow> rows;
};

/// The table as log lines (a header, then one line per row).
std::string format_profile(const ProfileTable& table);

/// Called with the table once the span ends (tests), beside the log.
using ProfileSink = std::function<void(const ProfileTable&)>;

/// The hook: starts the profiler before step FIRST fetches its batch,
/// waits for the device and stops after step LAST, logs the table and
/// writes the trace. Asks no metrics of the step.
std::unique_ptr<Hook> make_profile_hook(const ProfileSpan& span, const torch::Device& device,
                                        ProfileSink sink = nullptr);

}  // namespace fastnn::train
