// What train_dir must survive (the defects of issue "nothing lost, nothing
// silent"): a missing, garbage or stale checkpoint index, a corrupt newest
// checkpoint, a failed run beside good checkpoints, errors that end a run
// mid-way, impossible batch sizes and output directories, temporaries left
// by killed processes, two trainers on one directory, and a second signal;
// and what evaluations during training decide in it (stop_at_accuracy,
// keep_best_checkpoints, early stopping). Real binaries on a Fashion-MNIST slice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/process.h"
#include "tests/test_files.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace {
namespace fs = std::filesystem;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "train_dir";

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
    auto r =
        run({kBin + "/convert_dataset", "--dataset_name", "fashion_mnist", "--input",
             fmnist_source(), "--dataset_dir", data_dir(), "--max_examples", "2000", "--overwrite"},
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
  static std::string fresh(const std::string& name) { return cleared_dir(kTmp / name); }
  static std::vector<std::string> train(const std::string& dir, int stop,
                                        std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {kBin + "/train_image_classifier",
                                  "--config",
                                  config(),
                                  "--train_dir=" + dir,
                                  "--stop_at_step=" + std::to_string(stop),
                                  "--save_checkpoints_steps=10",
                                  "--max_to_keep=0"};
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
    return std::vector<std::string>{kBin + "/train_image_classifier",
                                    "--dataset_name=mock",
                                    "--model_name=lenet",
                                    "--num_classes=10",
                                    "--batch_size=8",
                                    "--use_fp16=False",
                                    "--synthetic_device_inputs=True",
                                    "--train_dir=" + dir,
                                    "--stop_at_step=" + std::to_string(stop),
                                    "--log_loss_every_n_iters=3",
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
    std::fstream f(fs::path(dir) / "model.ckpt-20",
                   std::ios::in | std::ios::out | std::ios::binary);
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
  auto r = run(train(dir, 20, {"--model_name=cifarnet", "--train_image_size=32"}), log("config1"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(slurp(fs::path(dir) / "config.cfg"), before);
}

TEST_F(TrainDir, DivergenceAndDataErrorsRecordTheirExitStatus) {
  const auto dir = fresh("status4");
  ASSERT_EQ(run(train(dir, 10), log("status4_0")).exit_code, 0);
  ASSERT_EQ(metrics_of(dir)["exit_status"], 0);
  setenv("FASTNN_FAILPOINTS", "inf_grad_steps=14", 1);
  auto r = run(train(dir, 20, {"--loss_scaling=static"}), log("status4_1"));
  unsetenv("FASTNN_FAILPOINTS");
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
  setenv("FASTNN_FAILPOINTS", "oom_at_step=14", 1);
  auto r = run(train(dir, 20), log("oom1"));
  unsetenv("FASTNN_FAILPOINTS");
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_NE(r.output.find("out of memory on cpu training at batch_size=32 (global step 14): "
                          "lower batch_size"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("FASTNN_FAILPOINTS oom_at_step"), std::string::npos) << r.output;
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

// 130 means a checkpoint was written. A second SIGINT that
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

// ---- Decisions from evaluations during training ----

// "eval <split> at global_step N: accuracy = X" lines of a log, in order.
std::vector<std::pair<int64_t, double>> evaluations(const std::string& log,
                                                    const std::string& split) {
  std::vector<std::pair<int64_t, double>> out;
  const std::regex line("eval " + split + " at global_step (\\d+): accuracy = ([0-9.]+)");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    out.emplace_back(std::stoll((*it)[1]), std::stod((*it)[2]));
  }
  return out;
}

std::set<std::string> files_starting(const std::string& dir, const std::string& prefix) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.insert(name);
  }
  return out;
}

// The kept steps best_checkpoints.json's own history calls the `n` best
// (higher accuracy first, the earlier step first on a tie).
std::vector<int64_t> top_steps(const nlohmann::json& evaluations, size_t n) {
  std::vector<std::pair<double, int64_t>> all;
  for (const auto& e : evaluations) all.emplace_back(-e[1].get<double>(), e[0].get<int64_t>());
  std::stable_sort(all.begin(), all.end());
  std::vector<int64_t> out;
  for (size_t i = 0; i < std::min(n, all.size()); ++i) out.push_back(all[i].second);
  return out;
}

// stop_at_accuracy: the run stops at the first evaluation reaching the
// target, with its checkpoint, and metrics.json says where and when.
TEST_F(TrainDir, StopAtAccuracyStopsAtTheFirstEvaluationReachingIt) {
  const auto dir = fresh("stop_at_accuracy");
  const double target = 0.5;
  auto r = run(train(dir, 300, {"--eval_every_n_iters=10", "--stop_at_accuracy=0.5"}),
               log("stop_at_accuracy"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto evals = evaluations(r.output, "test");
  ASSERT_FALSE(evals.empty()) << r.output;
  // Every evaluation but the last is below the target; the last reaches it.
  for (size_t i = 0; i + 1 < evals.size(); ++i) EXPECT_LT(evals[i].second, target);
  const auto [step, accuracy] = evals.back();
  ASSERT_GE(accuracy, target) << "not reached in 300 steps:\n" << r.output;
  EXPECT_EQ(static_cast<int64_t>(evals.size()), step / 10) << "evaluated again at the end";
  const auto m = metrics_of(dir);
  EXPECT_EQ(m["final_step"], step);
  EXPECT_EQ(m["exit_status"], 0);
  EXPECT_NE(m["stop_reason"].get<std::string>().find("stop_at_accuracy"), std::string::npos);
  const auto& s = m["stop_at_accuracy"];
  EXPECT_EQ(s["reached"], true);
  EXPECT_EQ(s["step"], step);
  EXPECT_EQ(s["split"], "test");
  EXPECT_NEAR(s["accuracy"].get<double>(), accuracy, 1e-4);
  // The training seconds leave the evaluations out.
  EXPECT_GT(m["eval_secs"].get<double>(), 0);
  EXPECT_GT(s["train_secs"].get<double>(), 0);
  EXPECT_LT(s["train_secs"].get<double>(),
            m["wall_secs"].get<double>() - m["eval_secs"].get<double>() + 0.5);
  EXPECT_TRUE(fs::exists(fs::path(dir) / ("model.ckpt-" + std::to_string(step))));
  EXPECT_EQ(files_starting(dir, "best"), std::set<std::string>{});  // nothing kept unasked
}

// keep_best_checkpoints: the N best by the validation split's accuracy,
// beside the latest ones under their own names: max_to_keep never removes
// them and a resumed run never starts from them, even from a higher step.
TEST_F(TrainDir, KeepBestCheckpointsKeepsTheNBestBesideTheLatest) {
  const auto dir = fresh("keep_best");
  const std::vector<std::string> flags = {"--eval_every_n_iters=10", "--keep_best_checkpoints=2",
                                          "--max_to_keep=1", "--validation_fraction=0.2",
                                          "--eval_split_name=validation"};
  auto r = run(train(dir, 60, flags), log("keep_best0"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto check = [&](size_t evaluated) {
    nlohmann::json j;
    std::ifstream(fs::path(dir) / "best_checkpoints.json") >> j;
    EXPECT_EQ(j["metric"], "validation_accuracy");
    ASSERT_EQ(j["evaluations"].size(), evaluated);
    const auto top = top_steps(j["evaluations"], 2);
    std::set<std::string> expected;
    std::vector<int64_t> kept, listed;
    for (const auto& b : j["best_checkpoints"]) kept.push_back(b["step"]);
    const auto metrics = metrics_of(dir);
    EXPECT_EQ(metrics["best_checkpoints"]["metric"], "validation_accuracy");
    for (const auto& b : metrics["best_checkpoints"]["kept"]) listed.push_back(b["step"]);
    for (int64_t s : top) expected.insert("best.ckpt-" + std::to_string(s));
    EXPECT_EQ(kept, top);
    EXPECT_EQ(listed, top);
    std::set<std::string> on_disk = files_starting(dir, "best.ckpt-");
    on_disk.erase("best.ckpt-999");
    EXPECT_EQ(on_disk, expected);
  };
  check(6);
  EXPECT_EQ(files_starting(dir, "model.ckpt-"), std::set<std::string>{"model.ckpt-60"});
  // A best checkpoint of a higher step than the latest is never resumed from.
  fs::copy_file(fs::path(dir) / "model.ckpt-60", fs::path(dir) / "best.ckpt-999");
  r = run(train(dir, 80, flags), log("keep_best1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("Restored " + (fs::path(dir) / "model.ckpt-60").string() + " (global_step 60)"),
      std::string::npos)
      << r.output;
  check(8);
  EXPECT_TRUE(fs::exists(fs::path(dir) / "best.ckpt-999"));
}

// early_stopping_patience: with nothing learned (learning rate 0) every
// evaluation equals the first, so the run ends exactly `patience`
// evaluations after it: exit 0, the reason in metrics.json.
TEST_F(TrainDir, EarlyStoppingEndsTheRunWithExit0AndItsReason) {
  const auto dir = fresh("early_stopping");
  auto r =
      run(train(dir, 300,
                {"--eval_every_n_iters=10", "--early_stopping_patience=2", "--learning_rate=0"}),
          log("early_stopping"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto m = metrics_of(dir);
  EXPECT_EQ(m["final_step"], 30);
  EXPECT_EQ(m["exit_status"], 0);
  EXPECT_NE(m["stop_reason"].get<std::string>().find("early stopping"), std::string::npos)
      << m["stop_reason"];
  EXPECT_EQ(m["early_stopping"]["stopped"], true);
  EXPECT_EQ(m["early_stopping"]["best_step"], 10);
  EXPECT_EQ(m["early_stopping"]["evaluations_without_improvement"], 2);
  EXPECT_EQ(m["early_stopping"]["metric"], "test_accuracy");
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-30"));
}

TEST_F(TrainDir, BadEvaluationStopValuesAreUsageErrors) {
  const auto dir = fresh("bad_stop_values");
  const struct {
    std::vector<std::string> flags;
    const char* message;
  } cases[] = {
      {{"--eval_every_n_iters=10", "--stop_at_accuracy=1.5"},
       "stop_at_accuracy: 1.5 is out of range"},
      {{"--eval_every_n_iters=10", "--stop_at_accuracy=0"},
       "stop_at_accuracy: 0.0 is out of range"},
      {{"--eval_every_n_iters=10", "--keep_best_checkpoints=-1"},
       "keep_best_checkpoints: -1 is out of range"},
      {{"--eval_every_n_iters=10", "--early_stopping_patience=-3"},
       "early_stopping_patience: -3 is out of range"},
      {{"--stop_at_accuracy=0.9"}, "stop_at_accuracy: needs evaluation during training"},
      {{"--keep_best_checkpoints=2"}, "keep_best_checkpoints: needs evaluation during training"},
      {{"--early_stopping_patience=2"},
       "early_stopping_patience: needs evaluation during training"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    auto r = run(train(dir, 10, c.flags), log("bad_stop_values"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-10"));
  }
}

}  // namespace
}  // namespace fastnn::testing
