#include "src/dist/cluster.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/config/value_parse.h"

extern char** environ;

namespace fastnn::dist {
namespace {

/// torch's default MASTER_PORT, used when a source names a host only.
constexpr int kDefaultPort = 29500;

std::optional<std::string> get(const Environment& env, const std::string& k) {
  auto it = env.find(k);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

bool present(const Environment& env, const std::string& k) { return env.count(k) > 0; }

/// `text` as a whole number: decimal digits only (no sign, space or junk;
/// not empty), INT64_MAX when longer than any int. nullopt when not digits.
std::optional<int64_t> digits_value(const std::string& text) {
  bool digits = !text.empty();
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) return std::nullopt;
  const size_t first = std::min(text.find_first_not_of('0'), text.size());
  if (text.size() - first > 10) return INT64_MAX;
  return first < text.size() ? std::stoll(text.substr(first)) : 0;
}

/// `text` as a count or index in [lo, hi], read without truncation.
/// ConfigError naming `what` and the value otherwise.
int bounded_int(const std::string& text, const std::string& what, int lo, int hi) {
  const std::string expected =
      "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  const std::optional<int64_t> v = digits_value(text);
  if (!v) {
    throw ConfigError(what + "=" + config::quote_value(text) +
                      (text.empty() ? " is empty (" : " is not an integer (") + expected + ")");
  }
  if (*v < lo || *v > hi)
    throw ConfigError(what + "=" + config::quote_value(text) + " is out of range (" + expected +
                      ")");
  return static_cast<int>(*v);
}

/// Variable `k` (set, maybe empty) as a count or index in [lo, hi].
int env_int(const Environment& env, const std::string& k, int lo = 0, int hi = kMaxWorldSize) {
  return bounded_int(env.at(k), k, lo, hi);
}

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    item = std::string(config::trim(item));
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string host_of(const std::string& address) { return split_host_port(address, "host").first; }

/// Local rank and size from the entries on this worker's host; the first
/// entry is the coordinator.
void set_from_hosts(ClusterSpec& spec) {
  const std::string me = host_of(spec.hosts[spec.rank]);
  spec.local_rank = 0;
  spec.local_world_size = 0;
  for (int i = 0; i < spec.world_size; ++i) {
    if (host_of(spec.hosts[i]) != me) continue;
    if (i < spec.rank) ++spec.local_rank;
    ++spec.local_world_size;
  }
  if (spec.world_size > 1) spec.coordinator = spec.hosts[0];
}

/// MASTER_PORT when set; ConfigError when it is not a port (1-65535).
std::optional<int> master_port(const Environment& env) {
  if (!present(env, "MASTER_PORT")) return std::nullopt;
  return env_int(env, "MASTER_PORT", 1, 65535);
}

/// The source's coordinator from MASTER_ADDR and MASTER_PORT (torch's
/// default port when only the address is set).
std::string master_address(const Environment& env, ClusterSpec& spec,
                           const std::string& missing_hint) {
  auto addr = get(env, "MASTER_ADDR");
  if (!addr) {
    if (spec.world_size > 1) throw ConfigError(missing_hint);
    return "";
  }
  int port = kDefaultPort;
  std::string origin = "MASTER_ADDR, default port " + std::to_string(kDefaultPort);
  if (auto p = master_port(env)) {
    port = *p;
    origin = "MASTER_ADDR, MASTER_PORT";
  }
  spec.provenance.emplace_back("coordinator", origin);
  return *addr + ":" + std::to_string(port);
}

ClusterSpec from_flags(const HParams& hp) {
  ClusterSpec spec;
  spec.source = ClusterSource::kFlags;
  spec.hosts = split_commas(hp.worker_hosts);
  for (const auto& h : spec.hosts) split_host_port(h, "worker_hosts");
  if (hp.job_name == "chief" && hp.task_index != 0) {
    throw ConfigError("task_index: " + std::to_string(hp.task_index) +
                      " contradicts job_name=chief (the chief is task 0)");
  }
  if (hp.task_index < 0 || hp.task_index >= static_cast<int64_t>(spec.hosts.size())) {
    throw ConfigError("task_index: " + std::to_string(hp.task_index) +
                      " is out of range (worker_hosts lists " + std::to_string(spec.hosts.size()) +
                      ")");
  }
  spec.world_size =
      static_cast<int>(std::min<size_t>(spec.hosts.size(), kMaxWorldSize + size_t{1}));
  spec.rank = static_cast<int>(hp.task_index);
  set_from_hosts(spec);
  const std::string where = "worker_hosts (" + hp.where("worker_hosts") + ")";
  spec.provenance = {{"rank", "task_index (" + hp.where("task_index") + ")"},
                     {"world_size", where},
                     {"local_rank", "worker_hosts entries on this host"},
                     {"local_world_size", "worker_hosts entries on this host"},
                     {"coordinator", "worker_hosts[0]"},
                     {"hosts", where}};
  return spec;
}

[[noreturn]] void tf_config_fail(const std::string& why) { throw ConfigError("TF_CONFIG: " + why); }

nlohmann::json parse_tf_config(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("TF_CONFIG is not valid JSON: ") + e.what());
  }
}

/// The host:port entries TF_CONFIG's cluster lists for `role` (none when
/// the role is absent).
std::vector<std::string> tf_config_hosts(const nlohmann::json& cluster, const char* role) {
  std::vector<std::string> out;
  if (!cluster.contains(role)) return out;
  const auto& hosts = cluster[role];
  if (!hosts.is_array()) tf_config_fail(std::string("cluster.") + role + " is not a list");
  for (const auto& host : hosts) {
    if (!host.is_string()) tf_config_fail(std::string("cluster.") + role + " holds a non-string");
    split_host_port(host.get<std::string>(), std::string("TF_CONFIG cluster.") + role);
    out.push_back(host.get<std::string>());
  }
  return out;
}

struct TfConfigTask {
  std::string type;
  int index = 0;
};

/// TF_CONFIG's task: its type, and its index (0 when absent) in
/// 0..kMaxWorldSize.
TfConfigTask tf_config_task(const nlohmann::json& tf_config) {
  if (!tf_config.contains("task") || !tf_config["task"].is_object() ||
      !tf_config["task"].value("type", nlohmann::json()).is_string()) {
    tf_config_fail("no \"task\" object with a \"type\"");
  }
  TfConfigTask task;
  task.type = tf_config["task"]["type"].get<std::string>();
  const auto& index_json = tf_config["task"].value("index", nlohmann::json(0));
  if (!index_json.is_number_integer()) tf_config_fail("task.index is not an integer");
  if (index_json.is_number_unsigned()
          ? index_json.get<uint64_t>() > kMaxWorldSize
          : index_json.get<int64_t>() < 0 || index_json.get<int64_t>() > kMaxWorldSize) {
    tf_config_fail("task.index " + index_json.dump() + " is out of range (expected 0.." +
                   std::to_string(kMaxWorldSize) + ")");
  }
  task.index = index_json.get<int>();
  return task;
}

/// The task's rank: the chief (or master) first, then the workers.
int tf_config_rank(const TfConfigTask& task, const std::vector<std::string>& chief,
                   const std::vector<std::string>& worker) {
  const std::string& type = task.type;
  const int index = task.index;
  if (type == "chief" || type == "master") {
    if (chief.empty() || index != 0)
      tf_config_fail("task " + type + ":" + std::to_string(index) + " is not in cluster");
    return 0;
  }
  if (type == "worker") {
    if (index < 0 || index >= static_cast<int>(worker.size())) {
      tf_config_fail("task.index " + std::to_string(index) + " is out of range (" +
                     std::to_string(worker.size()) + " workers)");
    }
    return static_cast<int>(chief.size()) + index;
  }
  tf_config_fail("task type " + config::quote_value(type) +
                 " is not supported: every FastNN task is a worker (chief, master "
                 "or worker)");
}

ClusterSpec from_tf_config(const std::string& text) {
  const nlohmann::json tf_config = parse_tf_config(text);
  if (!tf_config.is_object() || !tf_config.contains("cluster") ||
      !tf_config["cluster"].is_object()) {
    tf_config_fail("no \"cluster\" object");
  }
  const nlohmann::json& cluster = tf_config["cluster"];
  std::vector<std::string> chief = tf_config_hosts(cluster, "chief");
  const std::vector<std::string> master = tf_config_hosts(cluster, "master");
  const std::vector<std::string> worker = tf_config_hosts(cluster, "worker");
  chief.insert(chief.end(), master.begin(), master.end());
  if (chief.size() > 1) tf_config_fail("more than one chief/master task");
  const TfConfigTask task = tf_config_task(tf_config);
  ClusterSpec spec;
  spec.source = ClusterSource::kTfConfig;
  spec.hosts = chief;
  spec.hosts.insert(spec.hosts.end(), worker.begin(), worker.end());
  spec.rank = tf_config_rank(task, chief, worker);
  if (spec.hosts.size() > kMaxWorldSize)
    tf_config_fail("more than " + std::to_string(kMaxWorldSize) + " tasks");
  spec.world_size = static_cast<int>(spec.hosts.size());
  set_from_hosts(spec);
  spec.provenance = {{"rank", "TF_CONFIG task " + task.type + ":" + std::to_string(task.index) +
                                  " (chief first, then workers)"},
                     {"world_size", "TF_CONFIG cluster (chief + worker)"},
                     {"local_rank", "TF_CONFIG tasks on this host"},
                     {"local_world_size", "TF_CONFIG tasks on this host"},
                     {"coordinator", "TF_CONFIG first task"},
                     {"hosts", "TF_CONFIG cluster"}};
  return spec;
}

/// torchrun, or this project's launcher (same variables).
ClusterSpec from_torchrun(const Environment& env, bool launcher) {
  ClusterSpec spec;
  spec.source = launcher ? ClusterSource::kLauncher : ClusterSource::kTorchrun;
  for (const char* k : {"RANK", "WORLD_SIZE"}) {
    if (!present(env, k)) {
      throw ConfigError(std::string("LOCAL_RANK is set (") + source_name(spec.source) + ") but " +
                        k + " is not");
    }
  }
  spec.rank = env_int(env, "RANK");
  spec.world_size = env_int(env, "WORLD_SIZE");
  spec.local_rank = env_int(env, "LOCAL_RANK");
  spec.provenance = {{"rank", "RANK"}, {"world_size", "WORLD_SIZE"}, {"local_rank", "LOCAL_RANK"}};
  if (present(env, "LOCAL_WORLD_SIZE")) {
    spec.local_world_size = env_int(env, "LOCAL_WORLD_SIZE");
    spec.provenance.emplace_back("local_world_size", "LOCAL_WORLD_SIZE");
  } else {
    spec.local_world_size = spec.world_size;
    spec.provenance.emplace_back("local_world_size", "WORLD_SIZE (LOCAL_WORLD_SIZE not set)");
  }
  spec.coordinator =
      master_address(env, spec,
                     std::string("MASTER_ADDR is not set (") + source_name(spec.source) +
                         " variables RANK/WORLD_SIZE/LOCAL_RANK are)");
  return spec;
}

/// nproc_per_node, at most kMaxWorldSize.
int nproc_per_node(const HParams& hp) {
  if (hp.nproc_per_node > kMaxWorldSize) {
    throw ConfigError("nproc_per_node=" + std::to_string(hp.nproc_per_node) + " (" +
                      hp.where("nproc_per_node") + ") is more than " +
                      std::to_string(kMaxWorldSize) + " workers");
  }
  return static_cast<int>(hp.nproc_per_node);
}

/// The processes to run on each node, and where that count came from.
struct NodeProcesses {
  int count = 1;
  std::string from;
};

/// NPROC_PER_NODE when set (it must agree with an explicit nproc_per_node),
/// nproc_per_node otherwise.
NodeProcesses node_processes(const HParams& hp, const Environment& env) {
  int nproc = nproc_per_node(hp);
  std::string nproc_from = "nproc_per_node (" + hp.where("nproc_per_node") + ")";
  if (present(env, "NPROC_PER_NODE")) {
    const int env_nproc = env_int(env, "NPROC_PER_NODE");
    if (env_nproc < 1)
      throw ConfigError("NPROC_PER_NODE=" + std::to_string(env_nproc) + " must be >= 1");
    if (hp.sources.count("nproc_per_node") && env_nproc != nproc) {
      throw ConfigError("nproc_per_node=" + std::to_string(nproc) + " (" +
                        hp.where("nproc_per_node") +
                        ") contradicts NPROC_PER_NODE=" + std::to_string(env_nproc));
    }
    nproc = env_nproc;
    nproc_from = "NPROC_PER_NODE";
  }
  return {nproc, nproc_from};
}

/// The coordinator of a PAI-DLC/Kubeflow job, with its provenance.
void set_node_level_coordinator(const Environment& env, int nodes, ClusterSpec& spec) {
  if (nodes == 1 && !get(env, "MASTER_ADDR")) {
    // One node: the launcher's own coordinator on this machine.
    const auto port = master_port(env);
    spec.coordinator = "127.0.0.1:" + std::to_string(port.value_or(0));
    spec.provenance.emplace_back("coordinator", "127.0.0.1 (one node, MASTER_ADDR not set)");
    return;
  }
  spec.coordinator = master_address(env, spec, "MASTER_ADDR is not set (WORLD_SIZE and RANK are)");
}

/// PAI-DLC / Kubeflow PyTorchJob: WORLD_SIZE and RANK count nodes (pods),
/// not processes; NPROC_PER_NODE (or nproc_per_node) processes run on each.
ClusterSpec from_node_level(const HParams& hp, const Environment& env) {
  for (const char* var : {"RANK", "WORLD_SIZE"}) {
    if (!present(env, var)) {
      throw ConfigError(std::string(var) + " is not set but " +
                        (std::string(var) == "RANK" ? "WORLD_SIZE" : "RANK") +
                        " is (PAI-DLC/Kubeflow set both)");
    }
  }
  const int nodes = env_int(env, "WORLD_SIZE");
  const int node = env_int(env, "RANK");
  if (nodes < 1) throw ConfigError("WORLD_SIZE=" + std::to_string(nodes) + " must be >= 1");
  if (node < 0 || node >= nodes) {
    throw ConfigError("RANK=" + std::to_string(node) +
                      " is out of range (WORLD_SIZE=" + std::to_string(nodes) + " nodes)");
  }
  const NodeProcesses procs = node_processes(hp, env);
  const int nproc = procs.count;
  const std::string& nproc_from = procs.from;
  if (int64_t{nodes} * nproc > kMaxWorldSize) {
    throw ConfigError("WORLD_SIZE=" + std::to_string(nodes) + " nodes x " + nproc_from + "=" +
                      std::to_string(nproc) + " is more than " + std::to_string(kMaxWorldSize) +
                      " workers");
  }
  ClusterSpec spec;
  spec.source = ClusterSource::kNodeLevel;
  spec.world_size = nodes * nproc;
  spec.rank = node * nproc;
  spec.local_rank = 0;
  spec.local_world_size = nproc;
  spec.launch_workers = nproc > 1 ? nproc : 0;
  spec.provenance = {
      {"rank", "RANK (node index) x " + nproc_from + (nproc > 1 ? " + local rank" : "")},
      {"world_size", "WORLD_SIZE (nodes) x " + nproc_from},
      {"local_rank",
       nproc > 1 ? "the launcher assigns 0.." + std::to_string(nproc - 1) : "one process per node"},
      {"local_world_size", nproc_from}};
  set_node_level_coordinator(env, nodes, spec);
  return spec;
}

/// "2(x3),1" -> 2 2 2 1 (Slurm's SLURM_TASKS_PER_NODE): counts of 1 to
/// kMaxWorldSize, at most kMaxWorldSize entries, no spaces.
std::vector<int> expand_tasks_per_node(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return ConfigError(what + "=" + config::quote_value(text) + " " + why);
  };
  std::vector<int> out;
  size_t start = 0;
  do {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t paren = item.find("(x");
    if (paren != std::string::npos && item.back() != ')')
      throw bad("is malformed (expected counts like 2(x3),1)");
    const auto n = digits_value(item.substr(0, paren));
    const auto times = paren == std::string::npos
                           ? std::optional<int64_t>(1)
                           : digits_value(item.substr(paren + 2, item.size() - paren - 3));
    if (!n || !times) throw bad("is malformed (expected counts like 2(x3),1)");
    if (*n < 1 || *n > kMaxWorldSize || *times < 1 ||
        *times > kMaxWorldSize - static_cast<int64_t>(out.size())) {
      throw bad("is out of range (counts 1.." + std::to_string(kMaxWorldSize) + ", at most " +
                std::to_string(kMaxWorldSize) + " nodes)");
    }
    out.insert(out.end(), static_cast<size_t>(*times), static_cast<int>(*n));
  } while (start <= text.size());
  return out;
}

/// This node's task count, from SLURM_NTASKS_PER_NODE or else
/// SLURM_TASKS_PER_NODE at SLURM_NODEID; left as it is when neither is set.
void set_slurm_local_world_size(const Environment& env, ClusterSpec& spec) {
  if (present(env, "SLURM_NTASKS_PER_NODE")) {
    auto tasks_per_node =
        expand_tasks_per_node(env.at("SLURM_NTASKS_PER_NODE"), "SLURM_NTASKS_PER_NODE");
    spec.local_world_size = tasks_per_node[0];
    spec.provenance.emplace_back("local_world_size", "SLURM_NTASKS_PER_NODE");
  } else if (present(env, "SLURM_TASKS_PER_NODE")) {
    auto tasks_per_node =
        expand_tasks_per_node(env.at("SLURM_TASKS_PER_NODE"), "SLURM_TASKS_PER_NODE");
    const int node = present(env, "SLURM_NODEID") ? env_int(env, "SLURM_NODEID") : 0;
    if (node < 0 || node >= static_cast<int>(tasks_per_node.size())) {
      throw ConfigError("SLURM_NODEID=" + std::to_string(node) +
                        " is out of range of SLURM_TASKS_PER_NODE");
    }
    spec.local_world_size = tasks_per_node[node];
    spec.provenance.emplace_back("local_world_size", "SLURM_TASKS_PER_NODE[SLURM_NODEID]");
  }
}

/// The coordinator: MASTER_ADDR, else the first node of the host list.
void set_slurm_coordinator(const Environment& env, ClusterSpec& spec) {
  if (get(env, "MASTER_ADDR")) {
    spec.coordinator = master_address(env, spec, "");
  } else if (!spec.hosts.empty()) {
    int port = kDefaultPort;
    std::string origin = "first Slurm node, default port " + std::to_string(kDefaultPort);
    if (auto port_value = master_port(env)) {
      port = *port_value;
      origin = "first Slurm node, MASTER_PORT";
    }
    spec.coordinator = spec.hosts[0] + ":" + std::to_string(port);
    spec.provenance.emplace_back("coordinator", origin);
  } else if (spec.world_size > 1) {
    throw ConfigError(
        "Slurm: neither SLURM_STEP_NODELIST, SLURM_JOB_NODELIST nor "
        "MASTER_ADDR names the coordinator's host");
  }
}

ClusterSpec from_slurm(const Environment& env) {
  ClusterSpec spec;
  spec.source = ClusterSource::kSlurm;
  const char* ntasks = present(env, "SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  if (!present(env, ntasks)) {
    throw ConfigError("SLURM_PROCID is set but SLURM_NTASKS is not");
  }
  spec.rank = env_int(env, "SLURM_PROCID");
  spec.world_size = env_int(env, ntasks);
  spec.provenance = {{"rank", "SLURM_PROCID"}, {"world_size", ntasks}};
  if (present(env, "SLURM_LOCALID")) {
    spec.local_rank = env_int(env, "SLURM_LOCALID");
    spec.provenance.emplace_back("local_rank", "SLURM_LOCALID");
  }
  set_slurm_local_world_size(env, spec);
  for (const char* var : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (auto list = get(env, var)) {
      spec.hosts = expand_nodelist(*list, var);
      spec.provenance.emplace_back("hosts", var);
      break;
    }
  }
  set_slurm_coordinator(env, spec);
  return spec;
}

/// The coordinator's port of a single-host Open MPI job: MASTER_PORT, or
/// one every rank derives alike from the job's id (PMIx namespace or Open
/// MPI's job id), in 20000-31999 (below Linux's ephemeral ports), so
/// concurrent jobs on a host get different ports.
int open_mpi_port(const Environment& env, ClusterSpec& spec) {
  for (const char* key : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"}) {
    if (auto id = get(env, key); id && !id->empty() && spec.local_job_id.empty()) {
      spec.local_job_id = *id;
    }
  }
  if (auto port = master_port(env)) {
    spec.provenance.emplace_back("coordinator",
                                 "127.0.0.1 (every Open MPI rank on this host), MASTER_PORT");
    return *port;
  }
  for (const char* key : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_hnp_uri"}) {
    auto id = get(env, key);
    if (!id || id->empty()) continue;
    spec.local_job_id = *id;
    uint32_t h = 2166136261u;  // FNV-1a
    for (unsigned char c : *id) h = (h ^ c) * 16777619u;
    spec.provenance.emplace_back("coordinator",
                                 std::string("127.0.0.1 (every Open MPI rank on this host), "
                                             "port from ") +
                                     key);
    return 20000 + static_cast<int>(h % 12000);
  }
  spec.provenance.emplace_back(
      "coordinator",
      "127.0.0.1 (every Open MPI rank on this host), default port " + std::to_string(kDefaultPort));
  return kDefaultPort;
}

ClusterSpec from_open_mpi(const Environment& env) {
  ClusterSpec spec;
  spec.source = ClusterSource::kOpenMpi;
  if (!present(env, "OMPI_COMM_WORLD_SIZE")) {
    throw ConfigError("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  }
  spec.rank = env_int(env, "OMPI_COMM_WORLD_RANK");
  spec.world_size = env_int(env, "OMPI_COMM_WORLD_SIZE");
  spec.provenance = {{"rank", "OMPI_COMM_WORLD_RANK"}, {"world_size", "OMPI_COMM_WORLD_SIZE"}};
  if (present(env, "OMPI_COMM_WORLD_LOCAL_RANK")) {
    spec.local_rank = env_int(env, "OMPI_COMM_WORLD_LOCAL_RANK");
    spec.provenance.emplace_back("local_rank", "OMPI_COMM_WORLD_LOCAL_RANK");
  }
  if (present(env, "OMPI_COMM_WORLD_LOCAL_SIZE")) {
    spec.local_world_size = env_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
    spec.provenance.emplace_back("local_world_size", "OMPI_COMM_WORLD_LOCAL_SIZE");
  }
  // Open MPI names no hosts: MASTER_ADDR or coordinator_address must, unless
  // every rank runs on this host (mpirun -np N on one machine).
  if (get(env, "MASTER_ADDR")) {
    spec.coordinator = master_address(env, spec, "");
  } else if (present(env, "OMPI_COMM_WORLD_LOCAL_SIZE") &&
             spec.local_world_size == spec.world_size) {
    spec.coordinator = "127.0.0.1:" + std::to_string(open_mpi_port(env, spec));
  }
  return spec;
}

void check_ranges(const ClusterSpec& spec) {
  auto origin = [&](const std::string& field) {
    for (const auto& [k, v] : spec.provenance) {
      if (k == field) return v;
    }
    return field;
  };
  if (spec.world_size < 1 || spec.world_size > kMaxWorldSize) {
    throw ConfigError(origin("world_size") + ": world size " + std::to_string(spec.world_size) +
                      " must be in [1, " + std::to_string(kMaxWorldSize) + "]");
  }
  if (spec.rank < 0 || spec.rank >= spec.world_size) {
    throw ConfigError(origin("rank") + ": rank " + std::to_string(spec.rank) +
                      " is out of range (world size " + std::to_string(spec.world_size) + " from " +
                      origin("world_size") + ")");
  }
  if (spec.local_world_size < 1 || spec.local_world_size > spec.world_size) {
    throw ConfigError(origin("local_world_size") + ": local world size " +
                      std::to_string(spec.local_world_size) + " must be in [1, world size " +
                      std::to_string(spec.world_size) + "]");
  }
  if (spec.local_rank < 0 || spec.local_rank >= spec.local_world_size) {
    throw ConfigError(origin("local_rank") + ": local rank " + std::to_string(spec.local_rank) +
                      " is out of range (local world size " +
                      std::to_string(spec.local_world_size) + ")");
  }
}

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::pair<std::string, int> split_host_port(const std::string& address, const std::string& what) {
  const size_t colon = address.rfind(':');
  const bool bracketed = !address.empty() && address[0] == '[';
  if (colon == std::string::npos || colon == 0 || (bracketed && address[colon - 1] != ']')) {
    throw ConfigError(what + ": " + config::quote_value(address) + " is not host:port");
  }
  std::string host = address.substr(0, colon);
  if (bracketed) host = host.substr(1, host.size() - 2);
  const std::string port_text = address.substr(colon + 1);
  int port = -1;
  try {
    port = bounded_int(port_text, what, 0, 65535);
  } catch (const ConfigError&) {
  }
  if (port < 0 || port > 65535 || host.empty()) {
    throw ConfigError(what + ": " + config::quote_value(address) +
                      " is not host:port (port 0-65535)");
  }
  return {host, port};
}

namespace {

ConfigError nodelist_error(const std::string& list, const std::string& what) {
  return ConfigError(what + "=" + config::quote_value(list) + " is not a Slurm host list");
}

/// `list` split at the commas outside brackets; empty items dropped.
std::vector<std::string> split_nodelist(const std::string& list, const std::string& what) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char ch : list) {
    if (ch == '[') ++depth;
    if (ch == ']' && --depth < 0) throw nodelist_error(list, what);
    if (ch == ',' && depth == 0) {
      if (!cur.empty()) items.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (depth != 0) throw nodelist_error(list, what);
  if (!cur.empty()) items.push_back(cur);
  return items;
}

/// Appends prefix + number + suffix for each number of `range` ("7" or
/// "07-12", zero-padded to lo's width) and each of `suffixes`.
void append_range(const std::string& range, const std::string& prefix,
                  const std::vector<std::string>& suffixes, const std::string& list,
                  const std::string& what, std::vector<std::string>& out) {
  const size_t dash = range.find('-');
  const std::string lo_text = range.substr(0, dash);
  const std::string hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
  int64_t lo, hi;
  try {
    lo = bounded_int(lo_text, what, 0, INT_MAX);
    hi = bounded_int(hi_text, what, 0, INT_MAX);
  } catch (const ConfigError&) {
    throw nodelist_error(list, what);
  }
  if (lo < 0 || hi < lo || hi - lo > 100000) throw nodelist_error(list, what);
  for (int64_t number = lo; number <= hi; ++number) {
    std::string num = std::to_string(number);
    if (num.size() < lo_text.size()) {
      num.insert(0, lo_text.size() - num.size(), '0');
    }
    for (const std::string& suffix : suffixes) out.push_back(prefix + num + suffix);
  }
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& list, const std::string& what) {
  std::vector<std::string> out;
  for (const std::string& item : split_nodelist(list, what)) {
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      out.push_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    const std::string prefix = item.substr(0, open);
    const std::vector<std::string> rest = close + 1 < item.size()
                                              ? expand_nodelist(item.substr(close + 1), what)
                                              : std::vector<std::string>{""};
    for (const std::string& range : split_commas(item.substr(open + 1, close - open - 1))) {
      append_range(range, prefix, rest, list, what, out);
    }
  }
  if (out.empty()) throw nodelist_error(list, what);
  return out;
}

namespace {

// Which sources the environment and flags hold (several may be present;
// the first in docs/design.md's order decides).
struct Sources {
  bool launched = false;  // a worker this project's launcher started
  bool flags = false;
  bool tf_config = false;
  bool torchrun = false;
  bool node_level = false;
  bool slurm = false;
  bool open_mpi = false;
};

Sources detect_sources(const HParams& hp, const Environment& env) {
  Sources s;
  s.launched = get(env, kLauncherMarker).has_value() && present(env, "LOCAL_RANK");
  s.flags = !split_commas(hp.worker_hosts).empty();
  s.tf_config = get(env, "TF_CONFIG").has_value() && config::trim(*get(env, "TF_CONFIG")) != "{}";
  // Set, even to "": an empty rank or size is an error, not "unset".
  s.torchrun = present(env, "LOCAL_RANK");
  s.node_level = !s.torchrun && (present(env, "WORLD_SIZE") || present(env, "RANK"));
  s.slurm = present(env, "SLURM_PROCID");
  s.open_mpi = present(env, "OMPI_COMM_WORLD_RANK");
  return s;
}

// mpirun inside a Slurm allocation: the Slurm variables describe the
// batch step, Open MPI's this process.
ClusterSpec from_slurm_or_mpirun_inside(const Environment& env, bool open_mpi) {
  ClusterSpec spec = from_slurm(env);
  if (!open_mpi) return spec;
  ClusterSpec mpi = from_open_mpi(env);
  if (mpi.rank == spec.rank && mpi.world_size == spec.world_size) return spec;
  if (mpi.coordinator.empty() && !spec.hosts.empty()) {
    mpi.coordinator = spec.coordinator;
    mpi.hosts = spec.hosts;
    mpi.provenance.emplace_back("coordinator", "first Slurm node");
  }
  return mpi;
}

ClusterSpec single_process(const HParams& hp) {
  if (hp.task_index != 0) {
    throw ConfigError("task_index=" + std::to_string(hp.task_index) + " (" +
                      hp.where("task_index") +
                      ") needs worker_hosts or an environment source "
                      "(TF_CONFIG, torchrun, ...) with more workers");
  }
  ClusterSpec spec;
  const bool set = hp.sources.count("task_index") > 0;
  spec.provenance = {{"rank", set ? "task_index (" + hp.where("task_index") + ")" : "default"},
                     {"world_size", "default: no cluster source"}};
  return spec;
}

ClusterSpec from_first_source(const Sources& s, const HParams& hp, const Environment& env) {
  if (s.launched) return from_torchrun(env, /*launcher=*/true);
  if (s.flags) return from_flags(hp);
  if (s.tf_config) return from_tf_config(*get(env, "TF_CONFIG"));
  if (s.torchrun) return from_torchrun(env, /*launcher=*/false);
  if (s.node_level) return from_node_level(hp, env);
  if (s.slurm) return from_slurm_or_mpirun_inside(env, s.open_mpi);
  if (s.open_mpi) return from_open_mpi(env);
  return single_process(hp);
}

// The sources present beside the one that decided (--print_cluster's
// "ignored").
std::vector<std::string> ignored_sources(const Sources& s, ClusterSource chosen) {
  std::vector<std::string> out;
  for (auto [on, source] : {std::pair{s.flags, ClusterSource::kFlags},
                            {s.tf_config, ClusterSource::kTfConfig},
                            {s.torchrun && !s.launched, ClusterSource::kTorchrun},
                            {s.node_level, ClusterSource::kNodeLevel},
                            {s.slurm, ClusterSource::kSlurm},
                            {s.open_mpi, ClusterSource::kOpenMpi}}) {
    if (on && chosen != source) out.push_back(source_name(source));
  }
  return out;
}

// An explicit task_index must agree with an environment source.
void check_task_index(const HParams& hp, const ClusterSpec& spec) {
  if (!hp.sources.count("task_index") || hp.task_index == spec.rank) return;
  if (spec.source == ClusterSource::kFlags || spec.source == ClusterSource::kSingleProcess ||
      spec.source == ClusterSource::kLauncher) {
    return;
  }
  std::string from = source_name(spec.source);
  for (const auto& [k, v] : spec.provenance) {
    if (k == "rank") from = v;
  }
  throw ConfigError("task_index=" + std::to_string(hp.task_index) + " (" + hp.where("task_index") +
                    ") contradicts rank " + std::to_string(spec.rank) + " from " + from);
}

// This process becomes a launcher of `nproc` local workers.
ClusterSpec launcher_of(int nproc, const std::string& from, const Environment& env) {
  ClusterSpec spec;
  spec.source = ClusterSource::kLauncher;
  spec.world_size = spec.local_world_size = nproc;
  spec.launch_workers = nproc;
  std::string port = "0";
  std::string origin = "127.0.0.1, a free port";
  if (auto p = master_port(env)) {
    port = std::to_string(*p);
    origin = "127.0.0.1, MASTER_PORT";
  }
  spec.coordinator = "127.0.0.1:" + port;
  const std::string assigned = "the launcher assigns 0.." + std::to_string(nproc - 1);
  spec.provenance = {{"rank", assigned},
                     {"world_size", from},
                     {"local_rank", assigned},
                     {"local_world_size", from},
                     {"coordinator", origin}};
  return spec;
}

// nproc_per_node > 1 (or, unset, one worker per GPU): start local workers
// unless something already did. A replaced source joins `ignored`.
void apply_nproc_per_node(const HParams& hp, const Environment& env,
                          const std::function<int()>& gpus_per_machine, ClusterSpec& spec,
                          std::vector<std::string>& ignored) {
  if (spec.launch_workers != 0) return;
  const bool alone = spec.source == ClusterSource::kSingleProcess ||
                     (spec.world_size == 1 && spec.source != ClusterSource::kLauncher);
  int nproc = nproc_per_node(hp);
  std::string from = "nproc_per_node (" + hp.where("nproc_per_node") + ")";
  int from_gpus = 0;
  if (nproc == 1 && alone && !hp.sources.count("nproc_per_node") && gpus_per_machine) {
    if (const int gpus = gpus_per_machine(); gpus > 1) {
      nproc = from_gpus = gpus;
      from = "the " + std::to_string(gpus) + " GPUs of this machine (nproc_per_node not set)";
    }
  }
  if (nproc <= 1) return;
  if (alone) {
    const ClusterSource was = spec.source;
    spec = launcher_of(nproc, from, env);
    spec.workers_from_gpus = from_gpus;
    if (was != ClusterSource::kSingleProcess) ignored.push_back(source_name(was));
  } else if (spec.source == ClusterSource::kFlags || spec.source == ClusterSource::kTfConfig) {
    throw ConfigError("nproc_per_node=" + std::to_string(nproc) + " (" +
                      hp.where("nproc_per_node") + ") cannot be used with " +
                      source_name(spec.source) + " listing " + std::to_string(spec.world_size) +
                      " workers: each listed worker is one process");
  } else if (nproc != spec.local_world_size) {
    throw ConfigError("nproc_per_node=" + std::to_string(nproc) + " (" +
                      hp.where("nproc_per_node") + ") contradicts " + source_name(spec.source) +
                      "'s " + std::to_string(spec.local_world_size) + " processes per node");
  }
}

// coordinator_address overrides the source's.
void override_coordinator(const HParams& hp, ClusterSpec& spec) {
  if (hp.coordinator_address.empty()) return;
  split_host_port(hp.coordinator_address, "coordinator_address");
  spec.coordinator = hp.coordinator_address;
  for (auto it = spec.provenance.begin(); it != spec.provenance.end();) {
    it = it->first == "coordinator" ? spec.provenance.erase(it) : it + 1;
  }
  spec.provenance.emplace_back("coordinator",
                               "coordinator_address (" + hp.where("coordinator_address") + ")");
}

// A job of one process has no coordinator; any other must name one.
void require_coordinator(ClusterSpec& spec) {
  if (spec.world_size == 1 && spec.launch_workers == 0) {
    spec.coordinator.clear();
  } else if (spec.coordinator.empty()) {
    throw ConfigError(std::string(source_name(spec.source)) +
                      " names no coordinator: set MASTER_ADDR (and "
                      "MASTER_PORT) or coordinator_address");
  } else {
    split_host_port(spec.coordinator, "coordinator");
  }
}

}  // namespace

const char* source_name(ClusterSource source) {
  switch (source) {
    case ClusterSource::kSingleProcess:
      return "single process";
    case ClusterSource::kFlags:
      return "flags";
    case ClusterSource::kTfConfig:
      return "TF_CONFIG";
    case ClusterSource::kTorchrun:
      return "torchrun";
    case ClusterSource::kNodeLevel:
      return "PAI-DLC/Kubeflow";
    case ClusterSource::kSlurm:
      return "Slurm";
    case ClusterSource::kOpenMpi:
      return "Open MPI";
    case ClusterSource::kLauncher:
      return "launcher";
  }
  return "?";
}

ClusterSpec resolve_cluster(const HParams& hp, const Environment& env,
                            const std::function<int()>& gpus_per_machine) {
  const Sources sources = detect_sources(hp, env);
  ClusterSpec spec = from_first_source(sources, hp, env);
  std::vector<std::string> ignored = ignored_sources(sources, spec.source);
  check_task_index(hp, spec);
  apply_nproc_per_node(hp, env, gpus_per_machine, spec, ignored);
  override_coordinator(hp, spec);
  check_ranges(spec);
  require_coordinator(spec);
  if (!ignored.empty()) {
    std::string list;
    for (const auto& name : ignored) list += (list.empty() ? "" : ", ") + name;
    spec.provenance.emplace_back("ignored", list);
  }
  return spec;
}

std::string describe(const ClusterSpec& spec) {
  std::ostringstream os;
  auto origin = [&](const std::string& field) -> std::string {
    for (const auto& [key, value] : spec.provenance) {
      if (key == field) return "  (" + value + ")";
    }
    return "  (default)";
  };
  os << "source = " << source_name(spec.source) << "\n"
     << "rank = " << spec.rank << (spec.is_chief() ? " (chief)" : "") << origin("rank") << "\n"
     << "world_size = " << spec.world_size << origin("world_size") << "\n"
     << "local_rank = " << spec.local_rank << origin("local_rank") << "\n"
     << "local_world_size = " << spec.local_world_size << origin("local_world_size") << "\n"
     << "coordinator = " << (spec.coordinator.empty() ? "None" : spec.coordinator)
     << (spec.coordinator.empty() ? "" : origin("coordinator")) << "\n";
  if (!spec.hosts.empty()) {
    os << "hosts = ";
    for (size_t i = 0; i < spec.hosts.size(); ++i) {
      os << (i ? "," : "") << spec.hosts[i];
    }
    os << origin("hosts") << "\n";
  }
  if (spec.launch_workers > 0) {
    os << "launcher = starts " << spec.launch_workers << " local workers, ranks " << spec.rank
       << ".." << spec.rank + spec.launch_workers - 1 << "\n";
  }
  for (const auto& [key, value] : spec.provenance) {
    if (key == "ignored") os << "ignored sources = " << value << "\n";
  }
  if (!spec.distributed()) os << "mode = single process\n";
  return os.str();
}

}  // namespace fastnn::dist
