#include "src/train/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "fastnn/errors.h"
#include "src/io/tf_bundle_writer.h"
#include "src/io/tf_checkpoint.h"
#include "src/train/checkpoint_format.h"
#include "tests/datasets/test_data.h"
#include "tests/test_paths.h"

namespace fastnn::train {
namespace {
namespace fs = std::filesystem;

using fastnn::testing::fresh_dir;

std::string io_read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
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

// A process killed between writing a checkpoint and rewriting the index
// leaves a file the index does not list (found by
// tests/faults/kill_during_checkpoint.sh): the next manager still counts it
// and prunes it in turn, so max_to_keep holds.
TEST(Checkpoint, FilesMissingFromTheIndexAreStillPruned) {
  auto dir = fresh_dir("ckpt_unindexed");
  {
    CheckpointManager mgr(dir.string(), 2);
    for (int step : {1, 2}) mgr.save(step, {{"global_step", torch::tensor(step, torch::kInt64)}});
  }
  const std::string index = io_read(dir / "checkpoint");
  {
    CheckpointManager mgr(dir.string(), 2);
    mgr.save(3, {{"global_step", torch::tensor(3, torch::kInt64)}});
  }
  std::ofstream(dir / "checkpoint") << index;  // as if killed before the index write
  CheckpointManager mgr(dir.string(), 2);
  for (int step : {4, 5}) mgr.save(step, {{"global_step", torch::tensor(step, torch::kInt64)}});
  std::vector<std::string> left;
  for (const auto& f : checkpoint_files(dir.string())) left.push_back(fs::path(f).filename());
  EXPECT_EQ(left, (std::vector<std::string>{"model.ckpt-5", "model.ckpt-4"}));
}

TEST(Checkpoint, ResolveFailsClearly) {
  auto dir = fresh_dir("ckpt_resolve");
  EXPECT_THROW(resolve_checkpoint(dir.string()), DataError);
  EXPECT_THROW(resolve_checkpoint((dir / "nope").string()), DataError);
}

// Files whose CRC is right but whose declarations lie (what a buggy writer
// or a forger produces): every one is a DataError before any allocation,
// never a crash, a huge tensor or a read past the end.
TEST(Checkpoint, ForgedButCrcValidFilesAreRefused) {
  const std::string four(4, '\0');
  auto file = [](uint32_t count, const std::string& body) {
    std::string out = checkpoint_header(count) + body;
    append_checkpoint_crc(&out);
    return out;
  };
  auto entry = [](const std::string& name, uint8_t code, std::vector<int64_t> dims, uint64_t nbytes,
                  const std::string& data) {
    std::string out;
    append_checkpoint_entry(&out, name, static_cast<DTypeCode>(code), dims, data);
    // Overwrite the declared size (just before the data) to forge it.
    std::memcpy(&out[out.size() - data.size() - 8], &nbytes, 8);
    return out;
  };
  auto error_of = [](const std::string& bytes) {
    try {
      parse_checkpoint(bytes, "f");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A valid file parses.
  const auto ok = parse_checkpoint(file(1, entry("w", 0, {1}, 4, four)), "f");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].name, "w");
  EXPECT_EQ(ok[0].data.size(), 4u);

  EXPECT_NE(error_of(file(1, entry("w", 0, {-1}, 4, four))).find("negative dimension -1"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, entry("w", 9, {1}, 4, four))).find("unknown dtype code 9"),
            std::string::npos);
  // 2^40 x 2^40 elements overflow; a huge nbytes that matches a huge shape
  // is more than the file holds; a size that disagrees with the shape.
  EXPECT_NE(error_of(file(1, entry("w", 0, {int64_t{1} << 40, int64_t{1} << 40}, 4, four)))
                .find("does not match"),
            std::string::npos);
  EXPECT_EQ(error_of(file(1, entry("w", 3, {int64_t{1} << 40}, uint64_t{1} << 40, four))),
            "checkpoint 'f' is truncated");
  EXPECT_NE(error_of(file(1, entry("w", 0, {1}, ~uint64_t{0}, four))).find("does not match"),
            std::string::npos);
  EXPECT_NE(error_of(file(4000000000u, entry("w", 0, {1}, 4, four))).find("declares 4000000000"),
            std::string::npos);
  EXPECT_NE(error_of(file(2, entry("w", 0, {1}, 4, four) + entry("w", 0, {1}, 4, four)))
                .find("appears twice"),
            std::string::npos);
  EXPECT_NE(error_of(file(1, entry("w", 0, {1}, 4, four) + "xx")).find("2 bytes after"),
            std::string::npos);
  EXPECT_EQ(error_of(file(2, entry("w", 0, {1}, 4, four))),
            "checkpoint 'f' declares 2 tensors, more than its 43 bytes can hold");
  // A count the bytes could hold, with the second entry missing.
  EXPECT_EQ(
      error_of(file(2, entry("w", 0, {1}, 4, four) + entry("v", 0, {1}, 4, four).substr(0, 24))),
      "checkpoint 'f' is truncated");
}

// Our V2 writer's files, read back by our V2 reader: TensorFlow's names,
// shapes and types in the index, and our layouts again, bit for bit.
TEST(Checkpoint, TensorflowV2ExportReadsBackBitForBit) {
  auto dir = fresh_dir("ckpt_tf_export");
  TensorMap m;
  m["model/Net/conv1/weights"] = torch::randn({8, 3, 5, 5});          // OIHW
  m["model/Net/sep/depthwise_weights"] = torch::randn({6, 1, 3, 3});  // [C,1,kh,kw]
  m["model/Net/sep/depthwise_weights/ExponentialMovingAverage"] = torch::randn({6, 1, 3, 3});
  m["model/Net/fc/weights"] = torch::randn({10, 32});  // [out, in]
  m["model/Net/fc/biases"] = torch::randn({10});
  m["model/Net/conv1/BatchNorm/moving_mean"] = torch::randn({8});
  m["optimizer/Net/conv1/weights/Adam"] = torch::randn({8, 3, 5, 5});
  m["optimizer/beta1_power"] = torch::tensor(0.9f);
  m["global_step"] = torch::tensor(int64_t{1234}, torch::kInt64);
  m["input/batches_consumed"] = torch::tensor(int64_t{99}, torch::kInt64);
  m["loss_scale/scale"] = torch::tensor(2.0, torch::kFloat64);
  const std::string prefix = (dir / "model.ckpt-1234").string();
  const TfExport report = save_tf_checkpoint(prefix, m);
  EXPECT_EQ(report.variables, 5);
  EXPECT_EQ(report.moving_averages, 1);
  EXPECT_EQ(report.optimizer_slots, 2);
  EXPECT_TRUE(report.global_step);
  EXPECT_EQ(report.left_out,
            (std::vector<std::string>{"input/batches_consumed", "loss_scale/scale"}));

  const io::TfCheckpoint tf = io::TfCheckpoint::open(prefix);
  EXPECT_EQ(tf.format(), io::TfCheckpointFormat::kV2);
  ASSERT_EQ(tf.tensors().size(), 9u);
  const auto shape = [&](const std::string& name) { return tf.find(name)->shape; };
  EXPECT_EQ(shape("Net/conv1/weights"), (std::vector<int64_t>{5, 5, 3, 8}));  // HWIO
  EXPECT_EQ(shape("Net/sep/depthwise_weights"), (std::vector<int64_t>{3, 3, 6, 1}));
  EXPECT_EQ(shape("Net/fc/weights"), (std::vector<int64_t>{32, 10}));
  EXPECT_EQ(shape("Net/conv1/weights/Adam"), (std::vector<int64_t>{5, 5, 3, 8}));
  EXPECT_EQ(tf.find("global_step")->dtype, io::kTfInt64);
  EXPECT_EQ(tf.find("Net/fc/biases")->dtype, io::kTfFloat);
  EXPECT_EQ(tf.find("input/batches_consumed"), nullptr);

  const TensorMap back = load_tensors(prefix);
  for (const auto& [key, value] : m) {
    if (key.rfind("input/", 0) == 0 || key.rfind("loss_scale/", 0) == 0) continue;
    // Our reader keys every TensorFlow variable as "model/<name>".
    const std::string read_key = key == "global_step"              ? key
                                 : key.rfind("optimizer/", 0) == 0 ? "model/" + key.substr(10)
                                                                   : key;
    ASSERT_TRUE(back.count(read_key)) << read_key;
    const torch::Tensor& got = back.at(read_key);
    ASSERT_EQ(got.sizes(), value.sizes()) << key;
    ASSERT_EQ(got.scalar_type(), value.scalar_type()) << key;
    EXPECT_EQ(std::memcmp(got.contiguous().data_ptr(), value.contiguous().data_ptr(),
                          value.numel() * value.element_size()),
              0)
        << key;
  }
}

// A state file TensorFlow's parser accepts, and ours reads back.
TEST(Checkpoint, TensorflowStateFileNamesThePrefix) {
  const std::string text =
      io::tf_checkpoint_state_text("mod\xc3\xa8le \"x\".ckpt-7", {"mod\xc3\xa8le \"x\".ckpt-7"});
  EXPECT_EQ(io::checkpoint_state_path(text),
            std::optional<std::string>("mod\xc3\xa8le \"x\".ckpt-7"));
  EXPECT_NE(text.find("mod\\303\\250le \\\"x\\\".ckpt-7"), std::string::npos) << text;
}

}  // namespace
}  // namespace fastnn::train
