// report.html of a sweep: one self-contained page (inline SVG and CSS, no
// script, nothing fetched) with the metric against each parameter, a
// parallel-coordinates view, the loss and accuracy curves of the best
// trials (read from their TensorBoard event files), the best configuration
// as a copyable block, and every trial in a table.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/sweep/runner.h"

namespace fastnn::sweep {

/// (step, value) pairs of one scalar.
using Curve = std::vector<std::pair<int64_t, double>>;

/// The scalar `tag` ("loss", "accuracy") from every events.out.tfevents.*
/// file in `train_dir`, by step (a rerun's later value wins). Unreadable
/// files are skipped; an empty curve when there is none.
Curve read_scalar(const std::string& train_dir, const std::string& tag);

/// The page; `results` best first (as run_sweep returns them).
std::string report_html(const std::vector<TrialResult>& results, const std::string& metric,
                        const std::string& title);

}  // namespace fastnn::sweep
