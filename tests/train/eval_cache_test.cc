// Evaluation during training keeps a split's decoded batches (EvalCache):
// later passes read no file and give the same result; a split over the
// budget is read again every pass, with the same result too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "src/train/builder.h"
#include "src/train/evaluator.h"
#include "tests/datasets/test_data.h"

namespace fastnn::train {
namespace {
namespace fs = std::filesystem;

struct Rig {
  HParams hp;
  ModelAndData built;
  fs::path file;
  explicit Rig(const std::string& name) {
    const fs::path dir = testing::fresh_dir(name);
    file = dir / "ids.tfrecord";
    testing::write_id_file(file, 0, 100);  // 28x28x1, label id % 10
    hp.dataset_name = "tfrecord";
    hp.dataset_dir = dir.string();
    hp.eval_files = "ids.tfrecord";
    hp.num_classes = 10;
    hp.model_name = "lenet";
    hp.eval_batch_size = 32;  // 3 full batches and one of 4
    hp.num_preprocessing_threads = 1;
    torch::manual_seed(3);
    built = build(hp, "test");
  }
};

void expect_same(const EvalResult& a, const EvalResult& b) {
  EXPECT_EQ(a.samples, 100);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.top1_correct, b.top1_correct);
  EXPECT_EQ(a.top5_correct, b.top5_correct);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.class_total, b.class_total);
}

TEST(EvalCache, LaterPassesReadNoFileAndGiveTheSameResult) {
  Rig rig("eval_cache_kept");
  EvalCache cache;
  cache.budget_bytes = int64_t{1} << 30;
  const EvalResult first = evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache);
  ASSERT_TRUE(cache.complete);
  EXPECT_FALSE(cache.too_large);
  EXPECT_EQ(cache.batches.size(), 4u);
  EXPECT_EQ(cache.bytes, 100 * (rig.built.shape.numel() * 4 + 8));
  fs::remove(rig.file);  // a pipeline now would fail
  expect_same(first, evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache));
  expect_same(first, evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache));
}

TEST(EvalCache, ASplitOverTheBudgetIsReadAgainEveryPass) {
  Rig rig("eval_cache_over");
  const EvalResult uncached = evaluate_model(eval_options(rig.hp, rig.built), rig.built);
  EvalCache cache;
  cache.budget_bytes = 2 * 32 * (rig.built.shape.numel() * 4 + 8);  // two batches, not three
  expect_same(uncached, evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache));
  EXPECT_TRUE(cache.too_large);
  EXPECT_FALSE(cache.complete);
  EXPECT_TRUE(cache.batches.empty());
  EXPECT_EQ(cache.bytes, 0);
  expect_same(uncached, evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache));
  fs::remove(rig.file);
  EXPECT_ANY_THROW(evaluate_model(eval_options(rig.hp, rig.built), rig.built, &cache));
}

}  // namespace
}  // namespace fastnn::train
