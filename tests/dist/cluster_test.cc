// Cluster discovery: every source of docs/design.md's order, their order, and the
// errors for contradictory or malformed values.
#include "src/dist/cluster.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "tests/test_paths.h"

namespace fastnn::dist {
namespace {

HParams flags(const std::string& hosts, int64_t task_index) {
  HParams hp;
  hp.worker_hosts = hosts;
  hp.task_index = task_index;
  hp.sources["worker_hosts"] = "command line";
  hp.sources["task_index"] = "command line";
  return hp;
}

HParams with_nproc(int64_t n) {
  HParams hp;
  hp.nproc_per_node = n;
  hp.sources["nproc_per_node"] = "command line";
  return hp;
}

/// Runs `f`, expects ConfigError whose message contains `needle`.
template <typename F>
void expect_config_error(F f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError; expected one naming " << needle;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Where a process sits: {rank, world_size, local_rank, local_world_size}.
struct Place {
  int rank, world_size, local_rank, local_world_size;
};

void expect_place(const ClusterSpec& s, const Place& want) {
  EXPECT_EQ(s.rank, want.rank);
  EXPECT_EQ(s.world_size, want.world_size);
  EXPECT_EQ(s.local_rank, want.local_rank);
  EXPECT_EQ(s.local_world_size, want.local_world_size);
}

TEST(ClusterTest, NothingSetIsOneProcess) {
  ClusterSpec s = resolve_cluster(HParams(), {});
  EXPECT_STREQ(source_name(s.source), "single process");
  EXPECT_EQ(s.world_size, 1);
  EXPECT_EQ(s.rank, 0);
  EXPECT_TRUE(s.coordinator.empty());
  EXPECT_FALSE(s.distributed());
  EXPECT_EQ(s.launch_workers, 0);
}

TEST(ClusterTest, TaskIndexWithoutACluster) {
  HParams hp;
  hp.sources["task_index"] = "command line";
  EXPECT_NE(describe(resolve_cluster(hp, {})).find("rank = 0 (chief)  (task_index (command line))"),
            std::string::npos);
  hp.task_index = 2;
  expect_config_error([&] { resolve_cluster(hp, {}); },
                      "task_index=2 (command line) needs worker_hosts");
}

TEST(ClusterTest, FastNNFlags) {
  ClusterSpec s = resolve_cluster(flags("a:2222,b:2222,b:2223,c:2222", 2), {});
  EXPECT_STREQ(source_name(s.source), "flags");
  // local rank 1: the second entry on host b
  expect_place(s, {2, 4, 1, 2});
  EXPECT_EQ(s.coordinator, "a:2222");
  EXPECT_EQ(s.hosts.size(), 4u);
}

TEST(ClusterTest, FlagsWinOverEnvironment) {
  ClusterSpec s = resolve_cluster(flags("a:1,b:1", 1), {{"RANK", "0"},
                                                        {"WORLD_SIZE", "8"},
                                                        {"LOCAL_RANK", "0"},
                                                        {"MASTER_ADDR", "m"},
                                                        {"MASTER_PORT", "1"}});
  EXPECT_STREQ(source_name(s.source), "flags");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 2);
  EXPECT_NE(describe(s).find("ignored sources = torchrun"), std::string::npos);
}

TEST(ClusterTest, FlagsErrors) {
  expect_config_error([] { resolve_cluster(flags("a:1,b", 0), {}); }, "worker_hosts");
  HParams chief = flags("a:1,b:1", 1);
  chief.job_name = "chief";
  expect_config_error([&] { resolve_cluster(chief, {}); }, "job_name=chief");
  HParams both = flags("a:1,b:1", 0);
  both.nproc_per_node = 2;
  expect_config_error([&] { resolve_cluster(both, {}); }, "nproc_per_node");
}

TEST(ClusterTest, TfConfig) {
  const std::string tf = R"({"cluster":{"chief":["c:1"],"worker":["w0:1","w1:1"],"ps":[]},)"
                         R"("task":{"type":"worker","index":1}})";
  ClusterSpec s = resolve_cluster(HParams(), {{"TF_CONFIG", tf}});
  EXPECT_STREQ(source_name(s.source), "TF_CONFIG");
  EXPECT_EQ(s.rank, 2);  // chief first, then workers
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.coordinator, "c:1");
  const std::string chief = R"({"cluster":{"chief":["c:1"],"worker":["w0:1"]},)"
                            R"("task":{"type":"chief","index":0}})";
  EXPECT_EQ(resolve_cluster(HParams(), {{"TF_CONFIG", chief}}).rank, 0);
}

TEST(ClusterTest, TfConfigErrors) {
  expect_config_error(
      [] {
        resolve_cluster(HParams(), {{"TF_CONFIG", "{cluster"}});
      },
      "TF_CONFIG is not valid JSON");
  expect_config_error(
      [] {
        resolve_cluster(HParams(), {{"TF_CONFIG", R"({"cluster":{"worker":["a:1"]},)"
                                                  R"("task":{"type":"ps","index":0}})"}});
      },
      "task type 'ps'");
  expect_config_error(
      [] {
        resolve_cluster(HParams(), {{"TF_CONFIG", R"({"cluster":{"worker":["a:1"]},)"
                                                  R"("task":{"type":"worker","index":3}})"}});
      },
      "TF_CONFIG: task.index 3");
}

Environment torchrun(int rank, int world, int local, int local_world) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(local)},
          {"LOCAL_WORLD_SIZE", std::to_string(local_world)},
          {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29400"},
          {"GROUP_RANK", "1"}};
}

TEST(ClusterTest, Torchrun) {
  ClusterSpec s = resolve_cluster(HParams(), torchrun(5, 8, 1, 4));
  EXPECT_STREQ(source_name(s.source), "torchrun");
  expect_place(s, {5, 8, 1, 4});
  EXPECT_EQ(s.coordinator, "10.0.0.1:29400");
  EXPECT_EQ(s.launch_workers, 0);
  const std::string text = describe(s);
  EXPECT_NE(text.find("rank = 5  (RANK)"), std::string::npos) << text;
  EXPECT_NE(text.find("coordinator = 10.0.0.1:29400  (MASTER_ADDR, "
                      "MASTER_PORT)"),
            std::string::npos)
      << text;
}

TEST(ClusterTest, TorchrunErrorsNameTheVariable) {
  expect_config_error([] { resolve_cluster(HParams(), torchrun(8, 8, 0, 4)); }, "RANK");
  expect_config_error([] { resolve_cluster(HParams(), torchrun(1, 8, 4, 4)); }, "LOCAL_RANK");
  Environment env = torchrun(1, 2, 1, 2);
  env["WORLD_SIZE"] = "two";
  expect_config_error([&] { resolve_cluster(HParams(), env); },
                      "WORLD_SIZE='two' is not an integer");
  env = torchrun(1, 2, 1, 2);
  env.erase("MASTER_ADDR");
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "MASTER_ADDR");
  env = torchrun(1, 2, 1, 2);
  env.erase("WORLD_SIZE");
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "WORLD_SIZE");
  env = torchrun(1, 2, 1, 2);
  env["MASTER_PORT"] = "70000";
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "MASTER_PORT");
}

// A hostile 10 MB value is named by its first 100 bytes, never echoed.
TEST(ClusterTest, ErrorsShowAtMost100BytesOfAValue) {
  const std::string big(10 << 20, 'x');
  auto expect_cut = [](const std::function<void()>& f) {
    try {
      f();
      ADD_FAILURE() << "no ConfigError";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_LT(msg.size(), 300u) << msg.substr(0, 300);
      EXPECT_NE(msg.find("'... (1048576"), std::string::npos) << msg.substr(0, 300);
    }
  };
  Environment env = torchrun(1, 2, 1, 2);
  env["WORLD_SIZE"] = big;
  expect_cut([&] { resolve_cluster(HParams(), env); });
  expect_cut([&] { resolve_cluster(flags(big + ",b:2", 0), {}); });
  expect_cut([&] { split_host_port(big + ":x", "c"); });
  expect_cut([&] { expand_nodelist(big + "]", "SLURM_JOB_NODELIST"); });
  env = {{"TF_CONFIG",
          R"({"cluster": {"worker": ["a:1"]}, "task": {"type": ")" + big + R"(", "index": 0}})"}};
  expect_cut([&] { resolve_cluster(HParams(), env); });
}

// Every integer the cluster resolution reads from the environment
// is parsed whole and range-checked: 2^32 + 1 is not 1, 2^31 is not -2^31,
// and signs, junk, spaces and "" are errors naming the variable and value.
TEST(ClusterTest, EnvironmentIntegersAreNeverTruncated) {
  const std::vector<std::pair<Environment, std::vector<std::string>>> sources = {
      {torchrun(1, 2, 1, 2),
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"}},
      {{{"WORLD_SIZE", "2"},
        {"RANK", "1"},
        {"NPROC_PER_NODE", "1"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "29400"}},
       {"WORLD_SIZE", "RANK", "NPROC_PER_NODE", "MASTER_PORT"}},
      {{{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"NPROC_PER_NODE", "2"}, {"MASTER_PORT", "29400"}},
       {"MASTER_PORT"}},
      {{{"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "2"},
        {"SLURM_LOCALID", "1"},
        {"SLURM_NODEID", "0"},
        {"SLURM_TASKS_PER_NODE", "2"},
        {"SLURM_JOB_NODELIST", "n1"},
        {"MASTER_PORT", "29400"}},
       {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_TASKS_PER_NODE",
        "MASTER_PORT"}},
      {{{"SLURM_PROCID", "1"},
        {"SLURM_NPROCS", "2"},
        {"SLURM_NTASKS_PER_NODE", "2"},
        {"SLURM_JOB_NODELIST", "n1"}},
       {"SLURM_NPROCS", "SLURM_NTASKS_PER_NODE"}},
      {{{"OMPI_COMM_WORLD_RANK", "1"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
        {"MASTER_PORT", "29400"}},
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE", "MASTER_PORT"}},
  };
  const std::vector<std::string> bad = {
      "4294967297", "2147483648", "4294967296", "99999999999999999999999",
      "-1",         "+1",         "-0",         "1x",
      " 1",         "1 ",         "",           "0x10",
      "1e3",        "１"};
  for (const auto& [env, vars] : sources) {
    ASSERT_NO_THROW(resolve_cluster(HParams(), env)) << env.begin()->first;
    for (const std::string& var : vars) {
      for (const std::string& value : bad) {
        Environment e = env;
        e[var] = value;
        const std::string named = var + "='" + value + "'";
        try {
          ClusterSpec s = resolve_cluster(HParams(), e);
          ADD_FAILURE() << named << " was accepted: rank " << s.rank << ", world size "
                        << s.world_size;
        } catch (const ConfigError& err) {
          EXPECT_NE(std::string(err.what()).find(named), std::string::npos)
              << named << ": " << err.what();
        }
      }
    }
  }
  // Leading zeros are still the number.
  Environment env = torchrun(1, 2, 1, 2);
  env["WORLD_SIZE"] = "0002";
  EXPECT_EQ(resolve_cluster(HParams(), env).world_size, 2);
  // Beyond kMaxWorldSize (also as a product of nodes and processes).
  env["WORLD_SIZE"] = std::to_string(kMaxWorldSize + 1);
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "is out of range");
  expect_config_error(
      [] {
        resolve_cluster(HParams(), {{"WORLD_SIZE", "1048576"},
                                    {"RANK", "0"},
                                    {"NPROC_PER_NODE", "2"},
                                    {"MASTER_ADDR", "h"}});
      },
      "more than 1048576 workers");
  HParams hp = with_nproc(4294967298);
  expect_config_error([&] { resolve_cluster(hp, {}); }, "nproc_per_node=4294967298");
  expect_config_error(
      [] {
        resolve_cluster(HParams(),
                        {{"TF_CONFIG", R"({"cluster":{"worker":["a:1","b:1"]},)"
                                       R"("task":{"type":"worker","index":4294967296}})"}});
      },
      "task.index 4294967296 is out of range");
  expect_config_error(
      [] {
        resolve_cluster(HParams(), {{"SLURM_PROCID", "0"},
                                    {"SLURM_NTASKS", "2"},
                                    {"SLURM_NODEID", "0"},
                                    {"SLURM_TASKS_PER_NODE", "1(x4294967297)"},
                                    {"SLURM_JOB_NODELIST", "n1"}});
      },
      "SLURM_TASKS_PER_NODE='1(x4294967297)' is out of range");
  expect_config_error([] { split_host_port("h:+80", "worker_hosts"); }, "'h:+80'");
}

TEST(ClusterTest, ExplicitTaskIndexMustAgree) {
  HParams hp;
  hp.task_index = 3;
  hp.sources["task_index"] = "job.cfg:4";
  expect_config_error([&] { resolve_cluster(hp, torchrun(1, 4, 1, 4)); },
                      "task_index=3 (job.cfg:4) contradicts rank 1 from RANK");
  hp.task_index = 1;
  EXPECT_EQ(resolve_cluster(hp, torchrun(1, 4, 1, 4)).rank, 1);
}

// PAI-DLC / Kubeflow: MASTER_ADDR + WORLD_SIZE + RANK without LOCAL_RANK.
// WORLD_SIZE counts nodes and RANK is the node index, not the process's.
TEST(ClusterTest, PaiDlcNodeLevelTrap) {
  Environment env = {{"MASTER_ADDR", "dlc-master-0"},
                     {"MASTER_PORT", "23456"},
                     {"WORLD_SIZE", "2"},
                     {"RANK", "1"},
                     {"NPROC_PER_NODE", "4"}};
  ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "PAI-DLC/Kubeflow");
  // 8 processes (2 nodes x 4, not 2); node 1's first is rank 4, not 1
  expect_place(s, {4, 8, 0, 4});
  EXPECT_EQ(s.launch_workers, 4);
  EXPECT_EQ(s.coordinator, "dlc-master-0:23456");
  EXPECT_NE(describe(s).find("ranks 4..7"), std::string::npos) << describe(s);

  // The same count from the hparam instead of the variable.
  env.erase("NPROC_PER_NODE");
  s = resolve_cluster(with_nproc(2), env);
  EXPECT_EQ(s.world_size, 4);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.launch_workers, 2);

  // One process per pod (Kubeflow's default): node level == process level.
  s = resolve_cluster(HParams(), env);
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.launch_workers, 0);
}

TEST(ClusterTest, NodeLevelSingleNodeWithoutMasterAddr) {
  ClusterSpec s = resolve_cluster(with_nproc(2), {{"WORLD_SIZE", "1"}, {"RANK", "0"}});
  EXPECT_EQ(s.world_size, 2);
  EXPECT_EQ(s.launch_workers, 2);
  EXPECT_EQ(s.coordinator, "127.0.0.1:0");
  // Several nodes cannot guess the chief's address.
  expect_config_error(
      [] {
        resolve_cluster(with_nproc(2), {{"WORLD_SIZE", "2"}, {"RANK", "0"}});
      },
      "MASTER_ADDR is not set");
}

TEST(ClusterTest, PaiDlcContradictions) {
  Environment env = {
      {"MASTER_ADDR", "m"}, {"WORLD_SIZE", "2"}, {"RANK", "0"}, {"NPROC_PER_NODE", "4"}};
  expect_config_error([&] { resolve_cluster(with_nproc(8), env); }, "contradicts NPROC_PER_NODE=4");
  env["RANK"] = "2";
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "RANK=2 is out of range");
  env.erase("RANK");
  expect_config_error([&] { resolve_cluster(HParams(), env); }, "RANK is not set");
}

TEST(ClusterTest, LauncherForOneMachine) {
  ClusterSpec s = resolve_cluster(with_nproc(3), {});
  EXPECT_STREQ(source_name(s.source), "launcher");
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.launch_workers, 3);
  EXPECT_EQ(s.coordinator, "127.0.0.1:0");  // the launcher picks the port
  s = resolve_cluster(with_nproc(2), {{"MASTER_PORT", "4444"}});
  EXPECT_EQ(s.coordinator, "127.0.0.1:4444");
}

TEST(ClusterTest, LauncherWorkersWinOverTheirInheritedSources) {
  Environment env = torchrun(1, 2, 1, 2);
  env[kLauncherMarker] = "1";
  env["TF_CONFIG"] = R"({"cluster":{"worker":["a:1","b:1"]},)"
                     R"("task":{"type":"worker","index":0}})";
  ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "launcher");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.launch_workers, 0);
}

TEST(ClusterTest, TorchrunWithAgreeingNprocDoesNotLaunch) {
  ClusterSpec s = resolve_cluster(with_nproc(4), torchrun(1, 8, 1, 4));
  EXPECT_EQ(s.launch_workers, 0);
  expect_config_error([] { resolve_cluster(with_nproc(2), torchrun(1, 8, 1, 4)); },
                      "nproc_per_node=2 (command line) contradicts torchrun's 4");
}

TEST(ClusterTest, Slurm) {
  Environment env = {{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "6"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_TASKS_PER_NODE", "2(x3)"},
                     {"SLURM_JOB_NODELIST", "gpu[07-09]"}};
  ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "Slurm");
  expect_place(s, {5, 6, 1, 2});
  EXPECT_EQ(s.coordinator, "gpu07:29500");
  ASSERT_EQ(s.hosts.size(), 3u);
  EXPECT_EQ(s.hosts[2], "gpu09");
  // The step's list wins over the job's; MASTER_PORT sets the port.
  env["SLURM_STEP_NODELIST"] = "n[2-3]";
  env["MASTER_PORT"] = "1234";
  EXPECT_EQ(resolve_cluster(HParams(), env).coordinator, "n2:1234");
  env["SLURM_PROCID"] = "6";
  expect_config_error([&] { resolve_cluster(HParams(), env); },
                      "SLURM_PROCID: rank 6 is out of range");
}

TEST(ClusterTest, SlurmNodelist) {
  EXPECT_EQ(expand_nodelist("host[01-03]", "L"),
            (std::vector<std::string>{"host01", "host02", "host03"}));
  EXPECT_EQ(expand_nodelist("a[1,3-4],b,c[9-10]x", "L"),
            (std::vector<std::string>{"a1", "a3", "a4", "b", "c9x", "c10x"}));
  EXPECT_EQ(expand_nodelist("r[1-2]n[1-2]", "L"),
            (std::vector<std::string>{"r1n1", "r1n2", "r2n1", "r2n2"}));
  expect_config_error([] { expand_nodelist("a[1-", "SLURM_JOB_NODELIST"); },
                      "SLURM_JOB_NODELIST='a[1-'");
  expect_config_error([] { expand_nodelist("a[3-1]", "L"); }, "L='a[3-1]'");
}

TEST(ClusterTest, OpenMpi) {
  Environment env = {{"OMPI_COMM_WORLD_RANK", "3"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  expect_config_error([&] { resolve_cluster(HParams(), env); },
                      "set MASTER_ADDR (and MASTER_PORT) or "
                      "coordinator_address");
  HParams hp;
  hp.coordinator_address = "head:7000";
  hp.sources["coordinator_address"] = "command line";
  ClusterSpec s = resolve_cluster(hp, env);
  EXPECT_STREQ(source_name(s.source), "Open MPI");
  expect_place(s, {3, 4, 1, 2});
  EXPECT_EQ(s.coordinator, "head:7000");
  env["MASTER_ADDR"] = "head";
  EXPECT_EQ(resolve_cluster(HParams(), env).coordinator, "head:29500");
}

TEST(ClusterTest, OpenMpiOnOneHostNeedsNoCoordinatorAddress) {
  // mpirun -np 2 on one machine: every rank local, no MASTER_ADDR.
  auto rank = [](int r) {
    return Environment{{"OMPI_COMM_WORLD_RANK", std::to_string(r)},
                       {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r)},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"PMIX_NAMESPACE", "prterun-host-4242@1"}};
  };
  const ClusterSpec a = resolve_cluster(HParams(), rank(0));
  const ClusterSpec b = resolve_cluster(HParams(), rank(1));
  EXPECT_STREQ(source_name(a.source), "Open MPI");
  EXPECT_EQ(a.world_size, 2);
  EXPECT_EQ(b.rank, 1);
  // Both ranks derive the same loopback address from the job's id.
  EXPECT_EQ(a.coordinator, b.coordinator);
  EXPECT_EQ(a.coordinator.rfind("127.0.0.1:", 0), 0u) << a.coordinator;
  const int port = std::stoi(a.coordinator.substr(10));
  EXPECT_GE(port, 20000);
  EXPECT_LT(port, 32000);
  EXPECT_NE(describe(a).find("PMIX_NAMESPACE"), std::string::npos) << describe(a);
  // Another job on the same host: another port.
  Environment other = rank(0);
  other["PMIX_NAMESPACE"] = "prterun-host-5151@1";
  EXPECT_NE(resolve_cluster(HParams(), other).coordinator, a.coordinator);
  // MASTER_PORT chooses the port; MASTER_ADDR the host as before.
  Environment with_port = rank(1);
  with_port["MASTER_PORT"] = "23456";
  EXPECT_EQ(resolve_cluster(HParams(), with_port).coordinator, "127.0.0.1:23456");
  with_port["MASTER_ADDR"] = "head";
  EXPECT_EQ(resolve_cluster(HParams(), with_port).coordinator, "head:23456");
}

// deploy/: the environment each manifest (or the operator, or Slurm) gives
// a worker, fed to the cluster discovery.
std::string deploy_file(const std::string& name) {
  std::ifstream in(std::string(FASTNN_SOURCE_DIR) + "/deploy/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The literal `- name: X / value: "Y"` environment entries of a manifest.
Environment literal_env(const std::string& yaml) {
  Environment env;
  const std::regex entry(R"re(- name: (\w+)\s*\n\s*value: "([^"]*)")re");
  for (std::sregex_iterator it(yaml.begin(), yaml.end(), entry), end; it != end; ++it) {
    env[(*it)[1]] = (*it)[2];
  }
  return env;
}

TEST(ClusterTest, DeployedEnvironmentsIndexedJob) {
  const std::string yaml = deploy_file("k8s/indexed-job.yaml");
  ASSERT_FALSE(yaml.empty());
  Environment env = literal_env(yaml);
  ASSERT_EQ(env.count("WORLD_SIZE"), 1u) << yaml;
  // RANK is the pod's completion index (downward API), the token a Secret.
  EXPECT_NE(yaml.find("batch.kubernetes.io/job-completion-index"), std::string::npos);
  EXPECT_NE(yaml.find("secretKeyRef"), std::string::npos);
  env["RANK"] = "1";
  env["FASTNN_JOB_TOKEN"] = "from-the-secret";
  const ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "PAI-DLC/Kubeflow");
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 2);
  // Pod 0 through the headless Service.
  EXPECT_EQ(s.coordinator, "fastnn-train-0.fastnn-train:29500");
}

TEST(ClusterTest, DeployedEnvironmentsPyTorchJob) {
  const std::string yaml = deploy_file("k8s/pytorchjob.yaml");
  ASSERT_FALSE(yaml.empty());
  // What the training operator sets: the Master's service and port, the
  // pod count, the pod's rank (Workers after the Master).
  std::smatch port, workers;
  ASSERT_TRUE(std::regex_search(
      yaml, port, std::regex(R"(name: pytorchjob-port\s*\n\s*containerPort: (\d+))")));
  ASSERT_TRUE(std::regex_search(yaml, workers, std::regex(R"(Worker:\s*\n\s*replicas: (\d+))")));
  const int world = 1 + std::stoi(workers[1]);
  for (int rank : {0, world - 1}) {
    Environment env = {{"MASTER_ADDR", "fastnn-master-0"},
                       {"MASTER_PORT", port[1]},
                       {"WORLD_SIZE", std::to_string(world)},
                       {"RANK", std::to_string(rank)}};
    const ClusterSpec s = resolve_cluster(HParams(), env);
    EXPECT_EQ(s.rank, rank);
    EXPECT_EQ(s.world_size, 4);
    EXPECT_EQ(s.coordinator, "fastnn-master-0:23456");
  }
  // The coordinator's health service is probed on the Master only.
  EXPECT_NE(yaml.find("grpc: {port: 23456}"), std::string::npos);
}

TEST(ClusterTest, DeployedEnvironmentsSlurmBatchScript) {
  const std::string script = deploy_file("slurm/train.sbatch");
  ASSERT_FALSE(script.empty());
  EXPECT_NE(script.find("--ntasks-per-node=4"), std::string::npos);
  EXPECT_NE(script.find("--nproc_per_node=1"), std::string::npos);
  // Task 5 of 2 nodes x 4 (srun's variables), MASTER_PORT as the script
  // exports it for job 4242.
  Environment env = {{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NODEID", "1"},
                     {"SLURM_TASKS_PER_NODE", "4(x2)"},
                     {"SLURM_JOB_NODELIST", "gpu[01-02]"},
                     {"MASTER_PORT", std::to_string(20000 + 4242 % 10000)},
                     {"FASTNN_JOB_TOKEN", "made-by-the-script"}};
  const ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "Slurm");
  expect_place(s, {5, 8, 1, 4});
  EXPECT_EQ(s.coordinator, "gpu01:24242");
}

TEST(ClusterTest, MpirunInsideASlurmAllocationUsesOpenMpi) {
  Environment env = {{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "4"},
                     {"SLURM_JOB_NODELIST", "n[1-2]"},
                     {"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "4"}};
  ClusterSpec s = resolve_cluster(HParams(), env);
  EXPECT_STREQ(source_name(s.source), "Open MPI");
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.coordinator, "n1:29500");
}

TEST(ClusterTest, CoordinatorAddressOverrides) {
  HParams hp;
  hp.coordinator_address = "other:9";
  hp.sources["coordinator_address"] = "job.cfg:2";
  ClusterSpec s = resolve_cluster(hp, torchrun(0, 2, 0, 2));
  EXPECT_EQ(s.coordinator, "other:9");
  EXPECT_NE(describe(s).find("coordinator = other:9  (coordinator_address "
                             "(job.cfg:2))"),
            std::string::npos)
      << describe(s);
  hp.coordinator_address = "nope";
  expect_config_error([&] { resolve_cluster(hp, torchrun(0, 2, 0, 2)); }, "coordinator_address");
}

TEST(ClusterTest, SplitHostPort) {
  EXPECT_EQ(split_host_port("a.b:80", "x"), std::make_pair(std::string("a.b"), 80));
  EXPECT_EQ(split_host_port("[::1]:9", "x"), std::make_pair(std::string("::1"), 9));
  expect_config_error([] { split_host_port("a:", "worker_hosts"); }, "worker_hosts");
}

}  // namespace
}  // namespace fastnn::dist
