#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "fastnn/errors.h"
#include "src/train/checkpoint.h"

namespace fastnn::train {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(FASTNN_TEST_TMP) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Checkpoint, RoundTripEveryDtype) {
  auto dir = fresh_dir("ckpt_roundtrip");
  TensorMap m;
  m["a/weights"] = torch::randn({3, 4});
  m["b"] = torch::arange(5, torch::kInt64);
  m["c"] = torch::randn({2}, torch::kFloat64);
  m["d"] = torch::tensor(7, torch::kInt64);
  m["e"] = torch::randint(0, 255, {9}, torch::kUInt8);
  m["f"] = torch::zeros({0});
  save_tensors((dir / "x").string(), m);
  auto back = load_tensors((dir / "x").string());
  ASSERT_EQ(back.size(), m.size());
  for (const auto& [k, v] : m) {
    ASSERT_TRUE(back.count(k)) << k;
    EXPECT_EQ(back[k].scalar_type(), v.scalar_type()) << k;
    EXPECT_TRUE(torch::equal(back[k], v)) << k;
  }
}

TEST(Checkpoint, CorruptionIsDetected) {
  auto dir = fresh_dir("ckpt_corrupt");
  TensorMap m{{"w", torch::randn({100})}};
  const auto path = (dir / "x").string();
  save_tensors(path, m);
  {
    // Flip every bit of one payload byte (writing a fixed value would
    // change nothing when the random weights already hold it there).
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(200);
    const char byte = static_cast<char>(f.get());
    f.seekp(200);
    f.put(static_cast<char>(~byte));
  }
  EXPECT_THROW(load_tensors(path), DataError);
  fs::resize_file(path, 50);
  EXPECT_THROW(load_tensors(path), DataError);
  EXPECT_THROW(load_tensors((dir / "missing").string()), DataError);
}

TEST(Checkpoint, ManagerKeepsLastNAndIndexNamesLatest) {
  auto dir = fresh_dir("ckpt_manager");
  {
    CheckpointManager mgr(dir.string(), 2);
    EXPECT_FALSE(mgr.latest().has_value());
    for (int step : {10, 20, 30}) {
      mgr.save(step, {{"global_step", torch::tensor(step, torch::kInt64)}});
    }
    EXPECT_FALSE(fs::exists(dir / "model.ckpt-10"));
    EXPECT_TRUE(fs::exists(dir / "model.ckpt-20"));
    ASSERT_TRUE(mgr.latest().has_value());
    EXPECT_EQ(fs::path(mgr.latest()->path).filename(), "model.ckpt-30");
  }
  // A new manager on the same directory (the first one has released its
  // lock) continues the same list.
  CheckpointManager again(dir.string(), 2);
  again.save(40, {{"global_step", torch::tensor(40, torch::kInt64)}});
  EXPECT_FALSE(fs::exists(dir / "model.ckpt-20"));
  EXPECT_EQ(resolve_checkpoint(dir.string()), (dir / "model.ckpt-40").string());
  std::ifstream idx(dir / "checkpoint");
  std::string first;
  std::getline(idx, first);
  EXPECT_EQ(first, "model_checkpoint_path: \"model.ckpt-40\"");
}

TEST(Checkpoint, ResolveFailsClearly) {
  auto dir = fresh_dir("ckpt_resolve");
  EXPECT_THROW(resolve_checkpoint(dir.string()), DataError);
  EXPECT_THROW(resolve_checkpoint((dir / "nope").string()), DataError);
}

}  // namespace
}  // namespace fastnn::train
