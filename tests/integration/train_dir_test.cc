// What train_dir must survive (the defects of issue "nothing lost, nothing
// silent"): a missing, garbage or stale checkpoint index, a corrupt newest
// checkpoint, a failed run beside good checkpoints, errors that end a run
// mid-way, impossible batch sizes and output directories, temporaries left
// by killed processes, two trainers on one directory, and a second signal.
// Real binaries on a Fashion-MNIST slice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace {
namespace fs = std::filesystem;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "train_dir";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json metrics_of(const std::string& dir) {
  nlohmann::json j;
  std::ifstream(fs::path(dir) / "metrics.json") >> j;
  return j;
}

// A pid no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// Kills and reaps a child the test did not wait for (a failed assertion).
struct Reaper {
  Child& child;
  ~Reaper() {
    if (running(child)) {
      kill(child.pid, SIGKILL);
      wait_for(child, 30);
    }
  }
};

// Starts a long training into `dir` and waits for its step-10 checkpoint.
Child start_training(const std::vector<std::string>& args, const std::string& dir,
                     const std::string& log_path) {
  Child c = spawn(args, log_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(fs::path(dir) / "model.ckpt-10") &&
         std::chrono::steady_clock::now() < deadline && running(c)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return c;
}

class TrainDir : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::create_directories(kTmp);
    auto r = run({kBin + "/convert_dataset", "--dataset_name", "fashion_mnist", "--input",
                  fmnist_source(), "--dataset_dir", data_dir(), "--max_examples", "2000",
                  "--overwrite"},
                 (kTmp / "convert.log").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ofstream cfg(config());
    cfg << "model_name=lenet\ndataset_name=fashion_mnist\n"
        << "dataset_dir=" << data_dir() << "\n"
        << "optimizer=momentum\nlearning_rate=0.01\nmomentum=0.9\n"
        << "batch_size=32\nuse_fp16=False\nenable_paisoar=False\n"
        << "log_loss_every_n_iters=50\nintra_op_parallelism_threads=1\n"
        << "num_preprocessing_threads=1\nshuffle_buffer_size=256\n";
  }
  static std::string data_dir() { return (kTmp / "fmnist").string(); }
  static std::string config() { return (kTmp / "test.cfg").string(); }
  static std::string fresh(const std::string& name) {
    fs::remove_all(kTmp / name);
    return (kTmp / name).string();
  }
  static std::vector<std::string> train(const std::string& dir, int stop,
                                        std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {kBin + "/train_image_classifier", "--config", config(),
                                  "--train_dir=" + dir, "--stop_at_step=" + std::to_string(stop),
                                  "--save_checkpoints_steps=10", "--max_to_keep=0"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static std::string log(const std::string& name) { return (kTmp / (name + ".log")).string(); }
};

// synthetic_device_inputs (benchmarks): no input pipeline, one batch made on
// the training device and reused; training runs, stops and checkpoints as
// any other run, and resumes.
TEST_F(TrainDir, SyntheticDeviceInputsTrainWithoutAPipeline) {
  const std::string dir = fresh("synthetic");
  auto args = [&dir](int stop) {
    return std::vector<std::string>{
        kBin + "/train_image_classifier", "--dataset_name=mock", "--model_name=lenet",
        "--num_classes=10", "--batch_size=8", "--use_fp16=False",
        "--synthetic_device_inputs=True", "--train_dir=" + dir,
        "--stop_at_step=" + std::to_string(stop), "--log_loss_every_n_iters=3",
        "--intra_op_parallelism_threads=1"};
  };
  auto r = run(args(6), log("synthetic"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("synthetic_device_inputs: one random batch of 8 made on cpu"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("global_step = 6"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-6"));
  r = run(args(9), log("synthetic_resume"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-9"));
}

// The index is a convenience: missing, empty, garbage or stale, the newest
// readable model.ckpt-* is resumed, with a warning; nothing is overwritten.
TEST_F(TrainDir, ABadIndexResumesFromTheNewestReadableCheckpoint) {
  const auto dir = fresh("bad_index");
  ASSERT_EQ(run(train(dir, 20), log("bad_index0")).exit_code, 0);
  const std::string ckpt20 = slurp(fs::path(dir) / "model.ckpt-20");
  const struct {
    const char* name;
    const char* index;  // nullptr: no index file
  } cases[] = {{"missing", nullptr},
               {"empty", ""},
               {"garbage", "\x01\x02 not an index \xff\n"},
               {"stale", "model_checkpoint_path: \"model.ckpt-10\"\n"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::remove(fs::path(dir) / "checkpoint");
    if (c.index) std::ofstream(fs::path(dir) / "checkpoint") << c.index;
    auto r = run(train(dir, 20), log(std::string("bad_index_") + c.name));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Restored " + (fs::path(dir) / "model.ckpt-20").string() +
                            " (global_step 20)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the newest readable checkpoint"), std::string::npos) << r.output;
    EXPECT_EQ(metrics_of(dir)["steps_this_run"], 0);
    EXPECT_EQ(slurp(fs::path(dir) / "model.ckpt-20"), ckpt20) << "checkpoint overwritten";
  }
}

TEST_F(TrainDir, ACorruptNewestCheckpointFallsBackToThePreviousOne) {
  const auto dir = fresh("corrupt_newest");
  ASSERT_EQ(run(train(dir, 20), log("corrupt0")).exit_code, 0);
  {
    std::fstream f(fs::path(dir) / "model.ckpt-20", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(300);
    const char b = static_cast<char>(f.get());
    f.seekp(300);
    f.put(static_cast<char>(~b));
  }
  auto r = run(train(dir, 30), log("corrupt1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(global_step 10)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CRC mismatch"), std::string::npos) << r.output;
  EXPECT_EQ(metrics_of(dir)["final_step"], 30);
}

TEST_F(TrainDir, NoReadableCheckpointIsADataErrorThatTouchesNothing) {
  const auto dir = fresh("none_readable");
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "model.ckpt-50") << "not a checkpoint";
  auto r = run(train(dir, 60), log("none_readable"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("none is readable"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(fs::path(dir) / "model.ckpt-50"), "not a checkpoint");
  EXPECT_FALSE(fs::exists(fs::path(dir) / "config.cfg"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-10"));
}

TEST_F(TrainDir, AFailedRunKeepsConfigCfgConsistentWithTheCheckpoints) {
  const auto dir = fresh("config_kept");
  ASSERT_EQ(run(train(dir, 10), log("config0")).exit_code, 0);
  const std::string before = slurp(fs::path(dir) / "config.cfg");
  ASSERT_NE(before.find("model_name=lenet"), std::string::npos) << before;
  auto r = run(train(dir, 20, {"--model_name=cifarnet", "--train_image_size=32"}),
               log("config1"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(slurp(fs::path(dir) / "config.cfg"), before);
}

TEST_F(TrainDir, DivergenceAndDataErrorsRecordTheirExitStatus) {
  const auto dir = fresh("status4");
  ASSERT_EQ(run(train(dir, 10), log("status4_0")).exit_code, 0);
  ASSERT_EQ(metrics_of(dir)["exit_status"], 0);
  setenv("FASTNN_FAULT_INF_GRAD_STEPS", "14", 1);
  auto r = run(train(dir, 20, {"--loss_scaling=static"}), log("status4_1"));
  unsetenv("FASTNN_FAULT_INF_GRAD_STEPS");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(metrics_of(dir)["exit_status"], 4);
  EXPECT_EQ(metrics_of(dir)["final_step"], 15);

  // A corrupt record half-way through the (only) shard, fail policy.
  const auto data = fresh("corrupt_data");
  fs::copy(data_dir(), data, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(data)) {
    if (e.path().filename().string().find("_train") == std::string::npos) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = fs::file_size(e.path());
    f.seekg(size / 2);
    const char b = static_cast<char>(f.get());
    f.seekp(size / 2);
    f.put(static_cast<char>(~b));
  }
  // The first run reads the intact copy (the input pipeline reads ahead).
  const auto dir3 = fresh("status3");
  ASSERT_EQ(run(train(dir3, 5), log("status3_0")).exit_code, 0);
  ASSERT_EQ(metrics_of(dir3)["exit_status"], 0);
  auto d = run(train(dir3, 200, {"--dataset_dir=" + data}), log("status3_1"));
  EXPECT_EQ(d.exit_code, 3) << d.output;
  EXPECT_EQ(metrics_of(dir3)["exit_status"], 3);
}

// Out of memory (injected: LibTorch's c10::OutOfMemoryError at step 14, as
// a GPU's caching allocator throws it) is exit 7 naming the batch size and
// the device, not an internal error; what train_dir held is kept, and the
// next run resumes from it.
TEST_F(TrainDir, OutOfMemoryIsExit7NamingTheBatchSizeAndKeepsTrainDir) {
  const auto dir = fresh("oom");
  ASSERT_EQ(run(train(dir, 10), log("oom0")).exit_code, 0);
  std::map<std::string, std::string> kept;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("model.ckpt-", 0) == 0 || name == "checkpoint") {
      kept[name] = slurp(e.path());
    }
  }
  ASSERT_TRUE(kept.count("model.ckpt-10"));
  setenv("FASTNN_FAULT_OOM_AT_STEP", "14", 1);
  auto r = run(train(dir, 20), log("oom1"));
  unsetenv("FASTNN_FAULT_OOM_AT_STEP");
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_NE(r.output.find("out of memory on cpu training at batch_size=32 (global step 14): "
                          "lower batch_size"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("FASTNN_FAULT_OOM_AT_STEP"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  EXPECT_EQ(metrics_of(dir)["exit_status"], 7);
  EXPECT_EQ(metrics_of(dir)["final_step"], 13);
  for (const auto& [name, bytes] : kept) {
    EXPECT_EQ(slurp(fs::path(dir) / name), bytes) << name << " changed";
  }
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-20"));
  auto again = run(train(dir, 20), log("oom2"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("(global_step 10)"), std::string::npos) << again.output;
  EXPECT_EQ(metrics_of(dir)["final_step"], 20);
}

TEST_F(TrainDir, ImpossibleBatchAndClassCountsAreConfigErrors) {
  const auto dir = fresh("batch");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(train(dir, 10, {"--dataset_name=mock", "--batch_size=1000000000000"}),
               log("batch_mock"), 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("batch_size"), std::string::npos) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  // fashion_mnist's train split is 60,000 images (the dataset's table).
  r = run(train(dir, 10, {"--batch_size=100000"}), log("batch_split"), 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("larger than the 60000 samples"), std::string::npos) << r.output;
  r = run(train(dir, 10, {"--num_classes=100000000000"}), log("classes"), 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("num_classes"), std::string::npos) << r.output;
}

TEST_F(TrainDir, UnusableTrainDirsAreUsageErrorsWithAShortMessage) {
  const auto base = fresh("unusable");
  fs::create_directories(base);
  std::ofstream(fs::path(base) / "a_file") << "x";
  for (const std::string& bad :
       {(fs::path(base) / "a_file" / "run").string(), std::string("/proc/fastnn_run")}) {
    SCOPED_TRACE(bad);
    auto r = run(train(bad, 10), log("unusable"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("train_dir"), std::string::npos) << r.output;
  }
  // A 10 MB value, from a config file: the message shows its first bytes.
  const auto cfg = (fs::path(base) / "long.cfg").string();
  {
    std::ofstream out(cfg);
    out << slurp(config()) << "train_dir=" << std::string(10 << 20, 'd') << "\n";
  }
  auto r = run({kBin + "/train_image_classifier", "--config", cfg, "--stop_at_step=1"},
               log("unusable_long"));
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 4000u) << r.output.substr(0, 2000);
}

TEST_F(TrainDir, TemporariesOfDeadProcessesAreRemovedAtStart) {
  const auto dir = fresh("stale_tmp");
  fs::create_directories(dir);
  const auto dead = fs::path(dir) / ("model.ckpt-5.tmp-" + std::to_string(dead_pid()));
  const auto live = fs::path(dir) / ("model.ckpt-6.tmp-" + std::to_string(getpid()));
  std::ofstream(dead) << "partial";
  std::ofstream(live) << "in progress";
  auto r = run(train(dir, 10), log("stale_tmp"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary was removed";
  EXPECT_NE(r.output.find("removed 1 temporary file"), std::string::npos) << r.output;
}

TEST_F(TrainDir, ASecondTrainerOnTheSameDirectoryIsRefused) {
  const auto dir = fresh("locked");
  Child first = start_training(train(dir, 1000000), dir, log("locked_first"));
  Reaper reaper{first};
  ASSERT_TRUE(running(first));
  auto second = run(train(dir, 20), log("locked_second"));
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("in use by another training process"), std::string::npos)
      << second.output;
  EXPECT_TRUE(running(first));
  kill(first.pid, SIGTERM);
  EXPECT_EQ(wait_for(first).exit_code, 143);
  // The lock goes with the process.
  EXPECT_EQ(run(train(dir, 1), log("locked_after")).exit_code, 0);
}

// Today's rule: 130 means a checkpoint was written. A second SIGINT that
// cuts the final checkpoint short exits 6 instead.
TEST_F(TrainDir, ASecondSignalNeverExitsAsIfTheCheckpointWereWritten) {
  const auto dir = fresh("second_signal");
  Child c = start_training(train(dir, 1000000), dir, log("second_signal"));
  Reaper reaper{c};
  ASSERT_TRUE(running(c));
  kill(c.pid, SIGINT);
  // Two signals sent back to back may merge into one pending signal.
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(c.pid, SIGINT);
  auto r = wait_for(c, 120);
  if (r.exit_code == 130) {
    EXPECT_NE(r.output.find("Saved "), std::string::npos) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 6) << r.output;
  }
}

}  // namespace
}  // namespace fastnn::testing
