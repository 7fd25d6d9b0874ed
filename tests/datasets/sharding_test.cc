// Worker sharding: the plan (file-level when balanced, record-level
// otherwise), record counting from headers, and pipelines of several
// workers that see disjoint records in equal numbers.
#include "datasets/sharding.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <fstream>
#include <set>

#include "fastnn/errors.h"
#include "fastnn/pipeline.h"
#include "tests/datasets/test_data.h"

namespace fastnn::datasets {
namespace {
namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::write_id_file;

TEST(PlanShards, FileLevelWhenFilesDivideEvenlyWithEqualCounts) {
  auto p = plan_shards({10, 10, 10, 10}, 1, 2);
  EXPECT_FALSE(p.record_level);
  EXPECT_EQ(p.files, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(p.samples, 20);
  EXPECT_EQ(p.dropped, 0);
  EXPECT_EQ(describe(p, 4),
            "shard 1 of 2: file-level, 2 of 4 files, 20 samples per epoch, 0 "
            "dropped");
}

TEST(PlanShards, RecordLevelOtherwiseWithTheRemainderDropped) {
  auto odd_files = plan_shards({10, 10, 10}, 0, 2);
  EXPECT_TRUE(odd_files.record_level);
  EXPECT_EQ(odd_files.files, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(odd_files.samples, 15);
  EXPECT_EQ(odd_files.dropped, 0);
  auto unequal = plan_shards({5, 5, 5, 6}, 3, 4);
  EXPECT_TRUE(unequal.record_level);
  EXPECT_EQ(unequal.samples, 5);
  EXPECT_EQ(unequal.dropped, 1);
  auto single = plan_shards({3, 4}, 0, 1);
  EXPECT_FALSE(single.record_level);
  EXPECT_EQ(single.samples, 7);
}

TEST(PlanShards, Errors) {
  EXPECT_THROW(plan_shards({10}, 2, 2), ConfigError);
  EXPECT_THROW(plan_shards({10}, -1, 2), ConfigError);
  EXPECT_THROW(plan_shards({1, 1}, 0, 3), DataError);
}

TEST(CountTfrecords, CountsCompleteRecordsOnly) {
  auto dir = fresh_dir("shard_count");
  auto file = write_id_file(dir / "a.tfrecord", 0, 7);
  EXPECT_EQ(count_tfrecords(file), 7);
  fs::resize_file(file, fs::file_size(file) - 3);
  EXPECT_EQ(count_tfrecords(file), 6);
  EXPECT_THROW(count_tfrecords((dir / "none.tfrecord").string()), DataError);
}

// TF's compressed TFRecords (named with the hint io.md promises, not "hold
// no record") and a FIFO (named, not waited on for a writer without end).
TEST(CountTfrecords, CompressedFilesAndFifosAreNamed) {
  auto dir = fresh_dir("shard_compressed");
  const auto message = [](const std::string& file) {
    try {
      count_tfrecords(file);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no DataError)");
  };
  const std::pair<const char*, std::string> kinds[] = {
      {"GZIP", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03junkjunk", 18)},
      {"ZLIB", std::string("\x78\x9cjunkjunkjunkjunk", 18)}};
  for (const auto& [kind, bytes] : kinds) {
    const fs::path file = dir / (std::string(kind) + ".tfrecord");
    std::ofstream(file, std::ios::binary) << bytes;
    EXPECT_NE(message(file.string()).find("looks " + std::string(kind) + "-compressed"),
              std::string::npos)
        << message(file.string());
  }
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(message((dir / "fifo").string()),
            "cannot read '" + (dir / "fifo").string() + "': it is a FIFO, not a TFRecord file");
}

PipelineOptions options(std::vector<std::string> files, int rank, int world) {
  auto o = testing::eval_options(std::move(files));
  o.is_training = true;
  o.shard_index = rank;
  o.num_shards = world;
  return o;
}

// Record ids seen (pixel value), batch sizes.
std::pair<std::vector<int>, std::vector<int64_t>> drain(Pipeline& p) {
  std::vector<int> ids;
  std::vector<int64_t> sizes;
  while (auto b = p.next()) {
    sizes.push_back(b->labels.size(0));
    auto px = b->images.select(1, 0).select(1, 0).select(1, 0);
    for (int64_t i = 0; i < px.size(0); ++i) {
      ids.push_back(static_cast<int>(std::lround(px[i].item<float>() * 128 + 128)));
    }
  }
  return {ids, sizes};
}

TEST(ShardedPipeline, UnevenFilesGiveEqualDisjointRecordShards) {
  auto dir = fresh_dir("shard_uneven");
  std::vector<std::string> files = {write_id_file(dir / "a.tfrecord", 0, 10),
                                    write_id_file(dir / "b.tfrecord", 10, 10),
                                    write_id_file(dir / "c.tfrecord", 20, 11)};
  std::set<int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    auto o = options(files, rank, 2);
    o.is_training = false;
    ::testing::internal::CaptureStdout();
    Pipeline p(o);
    EXPECT_EQ(::testing::internal::GetCapturedStdout(),
              "Input shard " + std::to_string(rank) +
                  " of 2: record-level, 3 of 3 files, 15 samples per epoch, 1 "
                  "dropped\n");
    EXPECT_EQ(p.stats().shard_samples, 15);
    EXPECT_EQ(p.stats().shard_dropped, 1);
    auto [ids, sizes] = drain(p);
    EXPECT_EQ(ids.size(), 15u);
    for (int id : ids) {
      EXPECT_EQ(id % 2, rank) << id;
      EXPECT_TRUE(seen.insert(id).second) << id << " read by two workers";
    }
  }
  EXPECT_EQ(seen.size(), 30u);
}

TEST(ShardedPipeline, BalancedFilesAreDealtOutWhole) {
  auto dir = fresh_dir("shard_files");
  std::vector<std::string> files;
  for (int f = 0; f < 4; ++f) {
    files.push_back(write_id_file(dir / ("f" + std::to_string(f) + ".tfrecord"), 5 * f, 5));
  }
  auto o = options(files, 1, 2);
  o.is_training = false;
  Pipeline p(o);
  auto [ids, sizes] = drain(p);
  EXPECT_EQ(ids, (std::vector<int>{5, 6, 7, 8, 9, 15, 16, 17, 18, 19}));
}

TEST(ShardedPipeline, TrainingWorkersTakeTheSameNumberOfSteps) {
  auto dir = fresh_dir("shard_steps");
  std::vector<std::string> files = {write_id_file(dir / "a.tfrecord", 0, 13),
                                    write_id_file(dir / "b.tfrecord", 13, 6)};
  std::vector<size_t> steps;
  for (int rank = 0; rank < 3; ++rank) {
    auto o = options(files, rank, 3);
    o.num_epochs = 2;
    o.shuffle_buffer_size = 8;
    Pipeline p(o);
    auto [ids, sizes] = drain(p);
    for (int64_t s : sizes) EXPECT_EQ(s, 4);
    steps.push_back(sizes.size());
  }
  // 19 records, 3 workers: 6 each, 12 over two epochs, 3 full batches of 4.
  EXPECT_EQ(steps, (std::vector<size_t>{3, 3, 3}));
}

TEST(ShardedPipeline, ImageFilesAreShardedByRecord) {
  auto dir = fresh_dir("shard_images");
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  for (int i = 0; i < 7; ++i) {
    files.push_back((dir / (std::to_string(i) + ".png")).string());
    std::ofstream(files.back()) << testing::png_of(28, 28, 1, static_cast<uint8_t>(i));
    labels.push_back(i % 2);
  }
  auto o = options(files, 1, 2);
  o.file_labels = labels;
  o.num_classes = 2;
  o.is_training = false;
  Pipeline p(o);
  EXPECT_EQ(drain(p).first, (std::vector<int>{1, 3, 5}));
}

}  // namespace
}  // namespace fastnn::datasets
