#include "src/config/job_settings.h"

#include <algorithm>
#include <map>

#include "src/config/hparams_table.h"
#include "src/config/value_parse.h"

namespace fastnn::config {
namespace {

// "key=value" lines -> key -> value (lines without '=' are skipped).
std::map<std::string, std::string> lines_of(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& per_rank_keys() {
  static const std::vector<std::string> kKeys = {
      // where this worker sits in the cluster and how it reaches the chief
      "job_name", "task_index", "taskId", "worker_hosts", "coordinator_address", "job_token_file",
      "tls_cert_file", "tls_key_file", "tls_ca_file",
      // its device and threads
      "device", "num_preprocessing_threads", "intra_op_parallelism_threads",
      "inter_op_parallelism_threads",
      // paths on its machine (rank 0's checkpoint and state are broadcast)
      "train_dir", "output_dir", "summaryDir", "dataset_dir", "train_files", "eval_files",
      "model_dir", "checkpoint_path"};
  return kKeys;
}

std::string job_settings(const HParams& hp) {
  const auto& skip = per_rank_keys();
  std::string out;
  for (const KeySpec& spec : key_table()) {
    if (spec.ignored() || std::find(skip.begin(), skip.end(), spec.name) != skip.end()) continue;
    out += std::string(spec.name) + "=" + format_value(spec, hp) + "\n";
  }
  return out;
}

std::string describe_differences(const std::string& mine, const std::string& chief,
                                 size_t max_keys) {
  const auto a = lines_of(mine), b = lines_of(chief);
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v)
      diff[k] = {v, it == b.end() ? "(not a key)" : quote_value(it->second)};
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) diff[k] = {"", quote_value(v)};
  }
  std::string out;
  size_t shown = 0;
  for (const auto& [k, v] : diff) {
    if (shown == max_keys) {
      out += " and " + std::to_string(diff.size() - shown) + " more";
      break;
    }
    out += (shown++ ? ", " : "") + k + "=" + (a.count(k) ? quote_value(v.first) : "(not a key)") +
           " (rank 0: " + v.second + ")";
  }
  return out;
}

}  // namespace fastnn::config
