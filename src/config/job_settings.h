// The settings every worker of a distributed job must share, as canonical
// text to compare at rendezvous (dist/session.cc): all keys but those each
// worker may set for itself. Internal to FastNN; no LibTorch.
#pragma once

#include <string>
#include <vector>

#include "fastnn/hparams.h"

namespace fastnn::config {

/// Keys a worker may set for itself: its place in the cluster, its device,
/// paths on its machine, thread counts and TLS files.
const std::vector<std::string>& per_rank_keys();

/// Every other key that has an effect (ignored keys are left out too) as
/// "key=value" lines (format_value's canonical token), in key-table order.
std::string job_settings(const HParams& hp);

/// The keys whose lines differ between two job_settings() texts, as
/// "key=<mine> (rank 0: <theirs>)", comma-separated, values shown by
/// quote_value(); at most `max_keys` keys, then "and N more". "" when equal.
std::string describe_differences(const std::string& mine, const std::string& chief,
                                 size_t max_keys = 8);

}  // namespace fastnn::config
