// Every kind of bad data under both policies: a CRC mismatch, a truncated
// file, an unparsable Example, an undecodable image and a label outside
// [0, num_classes). Fail: DataError naming file, record index and byte
// offset. Skip: dropped, counted by kind, the rest read.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "fastnn/errors.h"
#include "fastnn/pipeline.h"
#include "fastnn/tfrecord.h"
#include "tests/datasets/test_data.h"

namespace fastnn::datasets {
namespace {
namespace fs = std::filesystem;
using testing::example_of;
using testing::png_of;

constexpr int kRecords = 10;
constexpr int kBad = 6;

enum class Fault { kCrc, kTruncated, kExample, kImage, kLabel };

struct Case {
  Fault fault;
  const char* name;
  const char* reason;  // expected in the fail-policy message
};

// Writes 10 records with record kBad (the last one for truncation) broken;
// returns the file and the bad record's byte offset.
std::pair<std::string, uint64_t> write_faulty(const fs::path& dir,
                                              Fault fault) {
  std::vector<std::string> records;
  for (int i = 0; i < kRecords; ++i) {
    records.push_back(
        example_of(png_of(28, 28, 1, static_cast<uint8_t>(i)), i % 10));
  }
  const int bad = fault == Fault::kTruncated ? kRecords - 1 : kBad;
  if (fault == Fault::kExample)
    records[bad] = "\xff\xff\xff not a protobuf";
  if (fault == Fault::kImage)
    records[bad] = example_of("\x89PNG\r\n\x1a\n broken", 1);
  if (fault == Fault::kLabel) {
    records[bad] = example_of(png_of(28, 28, 1, 0), 10);
  }
  uint64_t offset = 0;
  for (int i = 0; i < bad; ++i)
    offset += io::frame_record(records[i]).size();
  const auto file = testing::write_records(dir / "data.tfrecord", records);
  if (fault == Fault::kCrc) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset + 12 + 20));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset + 12 + 20));
    f.put(static_cast<char>(c ^ 0x40));
  }
  if (fault == Fault::kTruncated)
    fs::resize_file(file, fs::file_size(file) - 10);
  return {file, offset};
}

PipelineOptions options(const std::string& file) {
  return testing::eval_options({file});
}

int64_t drain(Pipeline& p) {
  int64_t n = 0;
  while (auto b = p.next())
    n += b->labels.size(0);
  return n;
}

class BadData : public ::testing::TestWithParam<Case> {};

TEST_P(BadData, FailPolicyNamesFileRecordAndOffset) {
  const Case c = GetParam();
  auto dir = testing::fresh_dir(std::string("bad_fail_") + c.name);
  auto [file, offset] = write_faulty(dir, c.fault);
  const int bad = c.fault == Fault::kTruncated ? kRecords - 1 : kBad;
  Pipeline p(options(file));
  try {
    drain(p);
    FAIL() << "expected DataError for " << c.name;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    const std::string where = file + ": record " + std::to_string(bad) +
                              " at offset " + std::to_string(offset);
    EXPECT_NE(msg.find(where), std::string::npos)
        << msg << "\nexpected: " << where;
    EXPECT_NE(msg.find(c.reason), std::string::npos) << msg;
  }
}

TEST_P(BadData, SkipPolicyDropsAndCountsByKind) {
  const Case c = GetParam();
  auto dir = testing::fresh_dir(std::string("bad_skip_") + c.name);
  auto file = write_faulty(dir, c.fault).first;
  auto o = options(file);
  o.skip_corrupt = true;
  Pipeline p(o);
  EXPECT_EQ(drain(p), kRecords - 1);
  const auto st = p.stats();
  EXPECT_EQ(st.records_skipped, 1);
  EXPECT_EQ(st.images_decoded, kRecords - 1);
  const int64_t by_kind[] = {st.skipped_crc_mismatch,
                             st.skipped_truncated,
                             st.skipped_bad_example,
                             st.skipped_bad_image,
                             st.skipped_bad_label};
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(by_kind[k], k == static_cast<int>(c.fault) ? 1 : 0)
        << "kind " << k;
  }
  EXPECT_EQ(describe_skipped(st),
            std::string("1 corrupt records skipped: 1 ") + c.name);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind,
    BadData,
    ::testing::Values(Case{Fault::kCrc, "crc_mismatch", "CRC"},
                      Case{Fault::kTruncated, "truncated", "truncated"},
                      Case{Fault::kExample, "bad_example", ""},
                      Case{Fault::kImage, "bad_image", ""},
                      Case{Fault::kLabel, "bad_label", "label 10"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BadData, ShardedWorkersKeepTheirStepCountWhenRecordsAreSkipped) {
  auto dir = testing::fresh_dir("bad_sharded");
  auto file = write_faulty(dir, Fault::kCrc).first;
  for (int rank = 0; rank < 2; ++rank) {
    auto o = options(file);
    o.skip_corrupt = true;
    o.is_training = true;
    o.batch_size = 5;
    o.shard_index = rank;
    o.num_shards = 2;
    Pipeline p(o);
    int batches = 0;
    while (p.next())
      ++batches;
    EXPECT_EQ(batches, 1) << "rank " << rank;
  }
}

}  // namespace
}  // namespace fastnn::datasets
