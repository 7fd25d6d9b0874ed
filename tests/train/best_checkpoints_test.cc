// keep_best_checkpoints and early stopping's history (EvalHistory): which
// checkpoints are kept, what happens to their files, and what a resumed or a
// new run in the same train_dir makes of an earlier history.
#include "src/train/best_checkpoints.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "src/train/checkpoint.h"
#include "tests/datasets/test_data.h"

namespace fastnn::train {
namespace {
namespace fs = std::filesystem;

using testing::fresh_dir;

// The state a checkpoint holds: its step, so a file can be told apart.
std::function<TensorMap()> state_at(int64_t step) {
  return [step] { return TensorMap{{"global_step", torch::tensor(step)}}; };
}

std::set<std::string> best_files(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("best.ckpt-", 0) == 0) out.insert(name);
  }
  return out;
}

// An earlier run's history in `dir`: one evaluation, at step 10, kept.
void earlier_run(const fs::path& dir) {
  EvalHistory h(dir.string(), 1, "test_accuracy");
  h.resume_at(0);
  h.add(10, 0.9, state_at(10));
}

std::vector<int64_t> kept_steps(const EvalHistory& h) {
  std::vector<int64_t> out;
  for (const auto& b : h.best()) out.push_back(b.step);
  return out;
}

TEST(EvalHistory, KeepsTheNBestBestFirstAndRemovesTheFilesPushedOut) {
  const auto dir = fresh_dir("best_keep");
  EvalHistory h(dir.string(), 2, "validation_accuracy");
  h.resume_at(0);
  EXPECT_TRUE(h.add(10, 0.50, state_at(10)));
  EXPECT_TRUE(h.add(20, 0.70, state_at(20)));
  EXPECT_FALSE(h.add(30, 0.60, state_at(30)));  // kept (2nd), no improvement
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{20, 30}));
  EXPECT_FALSE(h.add(40, 0.55, state_at(40)));  // below both: not kept
  EXPECT_EQ(best_files(dir), (std::set<std::string>{"best.ckpt-20", "best.ckpt-30"}));
  EXPECT_EQ(load_tensors((dir / "best.ckpt-30").string())["global_step"].item<int64_t>(), 30);
  EXPECT_EQ(h.evaluations_without_improvement(), 2);
  EXPECT_EQ(h.best_step(), 20);
  EXPECT_DOUBLE_EQ(h.best_accuracy(), 0.70);
}

TEST(EvalHistory, ATieNeitherImprovesNorDisplacesTheEarlierStep) {
  const auto dir = fresh_dir("best_tie");
  EvalHistory h(dir.string(), 2, "test_accuracy");
  h.resume_at(0);
  EXPECT_TRUE(h.add(10, 0.5, state_at(10)));
  EXPECT_FALSE(h.add(20, 0.5, state_at(20)));  // fills the second place
  EXPECT_FALSE(h.add(30, 0.5, state_at(30)));  // equal to the worst kept
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(h.evaluations_without_improvement(), 2);
  EXPECT_EQ(h.best_step(), 10);
}

TEST(EvalHistory, AResumedRunForgetsWhatItWillDoAgainAndKeepsTheRest) {
  const auto dir = fresh_dir("best_resume");
  {
    EvalHistory h(dir.string(), 3, "test_accuracy");
    h.resume_at(0);
    h.add(10, 0.4, state_at(10));
    h.add(20, 0.6, state_at(20));
    h.add(30, 0.5, state_at(30));
    h.add(40, 0.7, state_at(40));
  }
  EvalHistory h(dir.string(), 3, "test_accuracy");
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{40, 20, 30}));  // read back
  h.resume_at(30);  // the run restarts from model.ckpt-30
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(best_files(dir), (std::set<std::string>{"best.ckpt-20", "best.ckpt-30"}));
  EXPECT_EQ(h.best_step(), 20);
  EXPECT_EQ(h.evaluations_without_improvement(), 1);
  // The file on disk says the same.
  nlohmann::json j;
  std::ifstream(dir / kBestCheckpointsFile) >> j;
  EXPECT_EQ(j["evaluations"].size(), 3u);
  EXPECT_EQ(j["best_checkpoints"].size(), 2u);
}

TEST(EvalHistory, ANewRunSetsAnEarlierHistoryAsideAndLeavesItsFiles) {
  const auto dir = fresh_dir("best_new_run");
  earlier_run(dir);
  EvalHistory h(dir.string(), 1, "test_accuracy");
  h.resume_at(0);
  EXPECT_TRUE(h.best().empty());
  EXPECT_EQ(h.best_step(), -1);
  EXPECT_TRUE(fs::exists(dir / "best.ckpt-10"));
  h.add(20, 0.1, state_at(20));  // the new run's own best, however low
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{20}));
}

TEST(EvalHistory, AnotherMetricsHistoryIsNotContinued) {
  const auto dir = fresh_dir("best_metric");
  earlier_run(dir);
  EvalHistory h(dir.string(), 1, "validation_accuracy");
  h.resume_at(10);
  EXPECT_TRUE(h.best().empty());
  EXPECT_TRUE(fs::exists(dir / "best.ckpt-10"));
}

TEST(EvalHistory, WithoutADirectoryNothingIsWritten) {
  const auto dir = fresh_dir("best_nodir");
  const fs::path before = fs::current_path();
  fs::current_path(dir);  // where relative names would land
  EvalHistory h("", 1, "test_accuracy");
  h.resume_at(0);
  EXPECT_TRUE(h.add(10, 0.9, []() -> TensorMap {
    ADD_FAILURE() << "tensors read";
    return {};
  }));
  EXPECT_EQ(kept_steps(h), (std::vector<int64_t>{10}));
  fs::current_path(before);
  EXPECT_TRUE(fs::is_empty(dir));
}

}  // namespace
}  // namespace fastnn::train
