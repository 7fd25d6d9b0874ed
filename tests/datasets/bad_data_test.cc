// Every kind of bad data under both policies: a CRC mismatch, a truncated
// file, an unparsable Example, an undecodable image and a label outside
// [0, num_classes). Fail: DataError naming file, record index and byte
// offset. Skip: dropped, counted by kind (and corrupt bytes), the rest read;
// a file that loses more than max_skipped_share of its bytes fails.
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

// One bad record of 20 is 5 % of the file, under max_skipped_share's 10 %.
constexpr int kRecords = 20;
constexpr int kBad = 6;

enum class Fault { kCrc, kTruncated, kExample, kImage, kLabel };

struct Case {
  Fault fault;
  const char* name;
  const char* reason;  // expected in the fail-policy message
};

std::vector<std::string> id_records() {
  std::vector<std::string> records;
  for (int i = 0; i < kRecords; ++i) {
    records.push_back(example_of(png_of(28, 28, 1, static_cast<uint8_t>(i)), i % 10));
  }
  return records;
}

struct Faulty {
  std::string file;
  /// The bad record's byte offset.
  uint64_t offset = 0;
  /// Bytes the TFRecord reader loses to the fault.
  int64_t lost_bytes = 0;
};

// Writes kRecords records with record kBad (the last one for truncation)
// broken.
Faulty write_faulty(const fs::path& dir, Fault fault) {
  std::vector<std::string> records = id_records();
  const int bad = fault == Fault::kTruncated ? kRecords - 1 : kBad;
  if (fault == Fault::kExample) records[bad] = "\xff\xff\xff not a protobuf";
  if (fault == Fault::kImage) records[bad] = example_of("\x89PNG\r\n\x1a\n broken", 1);
  if (fault == Fault::kLabel) {
    records[bad] = example_of(png_of(28, 28, 1, 0), 10);
  }
  uint64_t offset = 0;
  for (int i = 0; i < bad; ++i) offset += io::frame_record(records[i]).size();
  const auto file = testing::write_records(dir / "data.tfrecord", records);
  const auto framed = static_cast<int64_t>(io::frame_record(records[bad]).size());
  int64_t lost_bytes = 0;
  if (fault == Fault::kCrc) {
    lost_bytes = framed;
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset + 12 + 20));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset + 12 + 20));
    f.put(static_cast<char>(c ^ 0x40));
  }
  if (fault == Fault::kTruncated) {
    fs::resize_file(file, fs::file_size(file) - 10);
    lost_bytes = framed - 10;
  }
  return {file, offset, lost_bytes};
}

PipelineOptions options(const std::string& file) { return testing::eval_options({file}); }

int64_t drain(Pipeline& p) {
  int64_t n = 0;
  while (auto b = p.next()) n += b->labels.size(0);
  return n;
}

// The DataError message that ends reading `file` with `o`, or "".
std::string error_of(PipelineOptions o) {
  Pipeline p(std::move(o));
  try {
    drain(p);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

class BadData : public ::testing::TestWithParam<Case> {};

TEST_P(BadData, FailPolicyNamesFileRecordAndOffset) {
  const Case c = GetParam();
  auto dir = testing::fresh_dir(std::string("bad_fail_") + c.name);
  const Faulty faulty = write_faulty(dir, c.fault);
  const std::string& file = faulty.file;
  const uint64_t offset = faulty.offset;
  const int bad = c.fault == Fault::kTruncated ? kRecords - 1 : kBad;
  const std::string msg = error_of(options(file));
  ASSERT_NE(msg, "") << "expected DataError for " << c.name;
  const std::string where =
      file + ": record " + std::to_string(bad) + " at offset " + std::to_string(offset);
  EXPECT_NE(msg.find(where), std::string::npos) << msg << "\nexpected: " << where;
  EXPECT_NE(msg.find(c.reason), std::string::npos) << msg;
}

TEST_P(BadData, SkipPolicyDropsAndCountsByKind) {
  const Case c = GetParam();
  auto dir = testing::fresh_dir(std::string("bad_skip_") + c.name);
  const Faulty faulty = write_faulty(dir, c.fault);
  auto o = options(faulty.file);
  o.skip_corrupt = true;
  Pipeline p(o);
  EXPECT_EQ(drain(p), kRecords - 1);
  const auto st = p.stats();
  EXPECT_EQ(st.records_skipped, 1);
  EXPECT_EQ(st.images_decoded, kRecords - 1);
  const int64_t by_kind[] = {st.skipped_crc_mismatch, st.skipped_truncated, st.skipped_bad_example,
                             st.skipped_bad_image, st.skipped_bad_label};
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(by_kind[k], k == static_cast<int>(c.fault) ? 1 : 0) << "kind " << k;
  }
  EXPECT_EQ(st.skipped_oversized, 0);
  EXPECT_EQ(st.bytes_skipped, faulty.lost_bytes);
  std::string expected = std::string("1 corrupt records skipped: 1 ") + c.name;
  if (faulty.lost_bytes > 0) {
    expected += "; " + std::to_string(faulty.lost_bytes) + " corrupt bytes skipped";
  }
  EXPECT_EQ(describe_skipped(st), expected);
}

INSTANTIATE_TEST_SUITE_P(EveryKind, BadData,
                         ::testing::Values(Case{Fault::kCrc, "crc_mismatch", "CRC"},
                                           Case{Fault::kTruncated, "truncated", "truncated"},
                                           Case{Fault::kExample, "bad_example", ""},
                                           Case{Fault::kImage, "bad_image", ""},
                                           Case{Fault::kLabel, "bad_label", "label 10"}),
                         [](const auto& info) { return std::string(info.param.name); });

// Sizes declared by untrusted data are checked against the
// configured limits before anything is allocated for them. A record longer
// than max_record_bytes and an image whose header declares more than
// max_image_pixels (12000x12000 here, under the decoder's own hard cap) are
// data errors naming the limit, or skipped and counted.
TEST(BadData, DeclaredSizesOverTheLimitsAreBadDataNotAllocations) {
  auto dir = testing::fresh_dir("bad_limits");
  // One file per fault: under the fail policy the reader and the decoding
  // threads race to report the first error, so each file has only one.
  std::vector<std::string> records = id_records();
  records[kBad] = std::string(5000, 'x');  // framed correctly, not an Example
  const auto long_record = testing::write_records(dir / "long.tfrecord", records);
  records = id_records();
  std::string forged = png_of(28, 28, 1, 0);
  for (int at : {16, 20}) {  // IHDR width and height, big-endian
    const uint32_t side = 12000;
    for (int k = 0; k < 4; ++k) forged[at + k] = static_cast<char>(side >> (24 - 8 * k));
  }
  records[kBad] = example_of(forged, 1);
  const auto big_image = testing::write_records(dir / "big.tfrecord", records);

  auto o = options(long_record);
  o.max_record_bytes = 4096;
  std::string msg = error_of(o);
  EXPECT_NE(msg.find("record " + std::to_string(kBad)), std::string::npos) << msg;
  EXPECT_NE(msg.find("record of 5000 bytes is over the limit of 4096 (max_record_bytes)"),
            std::string::npos)
      << msg;
  o.skip_corrupt = true;
  o.max_skipped_share = 1;
  {
    Pipeline p(o);
    EXPECT_EQ(drain(p), kRecords - 1);
    // Counted as what it is, not as a CRC fault.
    EXPECT_EQ(p.stats().skipped_oversized, 1);
    EXPECT_EQ(p.stats().skipped_crc_mismatch, 0);
    EXPECT_EQ(describe_skipped(p.stats()).rfind("1 corrupt records skipped: 1 oversized", 0), 0u)
        << describe_skipped(p.stats());
  }

  o = options(big_image);
  msg = error_of(o);
  EXPECT_NE(msg.find("image of 12000x12000 = 144000000 pixels is over the limit of "
                     "100000000 (max_image_pixels)"),
            std::string::npos)
      << msg;
  o.skip_corrupt = true;
  Pipeline p(o);
  EXPECT_EQ(drain(p), kRecords - 1);
  EXPECT_EQ(p.stats().skipped_bad_image, 1);
}

// image_folder: a file over max_record_bytes is not read; skipped, it is
// counted as oversized, as an over-long TFRecord is.
TEST(BadData, AnImageFileOverTheLimitIsOversized) {
  auto dir = testing::fresh_dir("bad_big_file");
  std::vector<std::string> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back((dir / (std::to_string(i) + ".png")).string());
    std::ofstream(files.back(), std::ios::binary)
        << (i == 2 ? std::string(png_of(28, 28, 1, 0)) + std::string(8192, '\0')
                   : png_of(28, 28, 1, static_cast<uint8_t>(i)));
  }
  auto o = testing::eval_options(files);
  o.file_labels = {0, 1, 2, 3};
  o.max_record_bytes = 4096;
  const std::string msg = error_of(o);
  EXPECT_NE(msg.find("2.png: file of "), std::string::npos) << msg;
  EXPECT_NE(msg.find("over the limit of 4096 (max_record_bytes)"), std::string::npos) << msg;
  o.skip_corrupt = true;
  o.max_skipped_share = 1;
  Pipeline p(o);
  EXPECT_EQ(drain(p), 3);
  EXPECT_EQ(p.stats().skipped_oversized, 1);
  EXPECT_EQ(p.stats().skipped_bad_image, 0);
}

TEST(BadData, ShardedWorkersKeepTheirStepCountWhenRecordsAreSkipped) {
  auto dir = testing::fresh_dir("bad_sharded");
  auto file = write_faulty(dir, Fault::kCrc).file;
  for (int rank = 0; rank < 2; ++rank) {
    auto o = options(file);
    o.skip_corrupt = true;
    o.is_training = true;
    o.batch_size = 5;
    o.shard_index = rank;
    o.num_shards = 2;
    Pipeline p(o);
    int batches = 0;
    while (p.next()) ++batches;
    EXPECT_EQ(batches, kRecords / 2 / 5) << "rank " << rank;
  }
}

// Writes id_records() with `corrupt` applied to the framed bytes; returns the
// file and each record's offset (plus the file size).
std::pair<std::string, std::vector<uint64_t>> write_corrupted(
    const fs::path& dir, void (*corrupt)(std::string*, const std::vector<uint64_t>&)) {
  std::string bytes;
  std::vector<uint64_t> offsets;
  for (const auto& r : id_records()) {
    offsets.push_back(bytes.size());
    bytes += io::frame_record(r);
  }
  offsets.push_back(bytes.size());
  corrupt(&bytes, offsets);
  const auto file = (dir / "data.tfrecord").string();
  std::ofstream(file, std::ios::binary) << bytes;
  return {file, offsets};
}

TEST(BadData, FlippedLengthBitLosesOneRecordNotTheRestOfTheFile) {
  auto dir = testing::fresh_dir("bad_length_bit");
  auto [file, offsets] =
      write_corrupted(dir, [](std::string* bytes, const std::vector<uint64_t>& at) {
        (*bytes)[at[2] + 1] ^= 0x08;  // record 2's length
      });
  auto o = options(file);
  o.skip_corrupt = true;
  Pipeline p(o);
  EXPECT_EQ(drain(p), kRecords - 1);
  const auto st = p.stats();
  EXPECT_EQ(st.skipped_crc_mismatch, 1);
  EXPECT_EQ(st.bytes_skipped, static_cast<int64_t>(offsets[3] - offsets[2]));
  EXPECT_EQ(describe_skipped(st), "1 corrupt records skipped: 1 crc_mismatch; " +
                                      std::to_string(offsets[3] - offsets[2]) +
                                      " corrupt bytes skipped");
}

TEST(BadData, LosingMoreThanMaxSkippedShareOfAFileFails) {
  auto dir = testing::fresh_dir("bad_share");
  // Records 2..9 (40 % of the file) overwritten.
  auto [file, offsets] =
      write_corrupted(dir, [](std::string* bytes, const std::vector<uint64_t>& at) {
        for (uint64_t i = at[2] + 30; i < at[9] + 30; ++i) {
          (*bytes)[i] = static_cast<char>(i * 131 % 251);
        }
      });
  const uint64_t lost = offsets[10] - offsets[2];
  auto o = options(file);
  o.skip_corrupt = true;
  const std::string msg = error_of(o);
  EXPECT_NE(msg.find(file + ": " + std::to_string(lost) + " of " + std::to_string(offsets.back()) +
                     " bytes"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("max_skipped_share"), std::string::npos) << msg;
  o.max_skipped_share = 1;
  Pipeline p(o);
  EXPECT_EQ(drain(p), kRecords - 8);
  EXPECT_EQ(p.stats().records_skipped, 1);
  EXPECT_EQ(p.stats().bytes_skipped, static_cast<int64_t>(lost));
}

// Records rejected for their content (bad_label, bad_image,
// bad_example) count against max_skipped_share as well: a pipeline whose
// rejected records pass that share of the records it finished with (used
// or rejected) fails, at the end of its input and, once 10,000 records are
// finished, after every batch. One that uses none of its records fails
// whatever the share: a run that trains on nothing is a data error.
TEST(BadData, EveryRecordRejectedIsADataErrorNotAnEmptyRun) {
  auto dir = testing::fresh_dir("bad_all_rejected");
  const auto file = testing::write_id_file(dir / "ids.tfrecord", 0, 40);
  for (bool training : {false, true}) {
    auto o = options(file);
    o.skip_corrupt = true;
    o.max_skipped_share = 1;  // not even an unlimited share allows it
    o.labels_offset = 20;     // every label minus 20 is negative
    o.is_training = training;
    o.num_epochs = 3;
    const std::string msg = error_of(o);
    EXPECT_NE(msg.find("none of the " + std::to_string(training ? 120 : 40) + " records"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("bad_label"), std::string::npos) << msg;
    EXPECT_NE(msg.find("labels_offset 20"), std::string::npos) << msg;
  }
}

TEST(BadData, RejectedRecordsOfAnyKindCountAgainstMaxSkippedShare) {
  auto dir = testing::fresh_dir("bad_rejected_share");
  // Labels i % 10 with 8 classes: 8 of 40 records (20 %) are bad_label.
  const auto file = testing::write_id_file(dir / "ids.tfrecord", 0, 40);
  auto o = options(file);
  o.num_classes = 8;
  o.skip_corrupt = true;  // max_skipped_share 0.1
  std::string msg = error_of(o);
  EXPECT_NE(msg.find("8 of the 40 records"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_skipped_share"), std::string::npos) << msg;
  o.max_skipped_share = 0.25;
  {
    Pipeline p(o);
    EXPECT_EQ(drain(p), 32);
  }
  // A long run fails once 10,000 records are finished, not at its end.
  o.max_skipped_share = 0.1;
  o.is_training = true;
  o.num_epochs = 1000;
  Pipeline p(o);
  msg = "";
  try {
    drain(p);
  } catch (const DataError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("max_skipped_share"), std::string::npos) << msg;
  EXPECT_LT(p.stats().records_skipped, 8 * 1000 / 2);
}

// The batches held ahead are bounded: prefetch_buffer_size=1e9 (which would
// decode batches until the process dies) is a ConfigError naming the number.
TEST(BadData, PrefetchBeyondTheBoundIsAConfigErrorWithTheNumber) {
  auto dir = testing::fresh_dir("bad_prefetch");
  auto o = options(testing::write_id_file(dir / "ids.tfrecord", 0, 8));
  o.prefetch_batches = 1000000000;
  std::string msg;
  try {
    Pipeline p(o);
  } catch (const ConfigError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("prefetch_buffer_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1000000000"), std::string::npos) << msg;
  o.prefetch_batches = 2;
  o.num_parallel_batches = 1000000000;
  EXPECT_THROW(Pipeline{o}, ConfigError);
}

}  // namespace
}  // namespace fastnn::datasets
