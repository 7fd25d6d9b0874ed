#include "fastnn/tfrecord.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastnn/byte_source.h"
#include "fastnn/errors.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::io {
namespace {

namespace fs = std::filesystem;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) {
    out.push_back(static_cast<char>(v));
  }
  return out;
}

std::string make_record(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (auto& c : s) {
    c = static_cast<char>(rng());
  }
  return s;
}

std::vector<std::string> varied_records() {
  std::vector<std::string> records;
  const size_t sizes[] = {0,       1, 2, 3, 7, 8, 12, 100, 1000, 4096, 65537, (size_t{1} << 20) + 3,
                          3 << 20, 0, 5};
  uint32_t seed = 0;
  for (size_t n : sizes) {
    records.push_back(make_record(n, ++seed));
  }
  return records;
}

// Concatenated framed records, with each record's start offset.
std::string frame_all(const std::vector<std::string>& records,
                      std::vector<uint64_t>* offsets = nullptr) {
  std::string file;
  for (const auto& r : records) {
    if (offsets) {
      offsets->push_back(file.size());
    }
    file += frame_record(r);
  }
  return file;
}

std::vector<std::string> read_all(TFRecordReader* reader) {
  std::vector<std::string> out;
  std::string record;
  while (reader->next(&record)) {
    out.push_back(record);
  }
  return out;
}

// The skip policy; max_skipped_share 1 (never fail) unless a test is about it.
TFRecordReaderOptions skip_policy(double max_skipped_share = 1) {
  TFRecordReaderOptions o;
  o.skip_corrupt = true;
  o.max_skipped_share = max_skipped_share;
  return o;
}

std::string error_of(std::string file, TFRecordReaderOptions options = TFRecordReaderOptions{}) {
  TFRecordReader reader(memory_source(std::move(file), "data.tfrecord"), options);
  try {
    read_all(&reader);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

class TFRecordFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tfrecord_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }
  fs::path dir_;
};

// Yields at most one byte per read() call, to exercise short reads.
class TrickleSource : public ByteSource {
 public:
  explicit TrickleSource(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t read(void* dst, size_t n) override {
    if (n == 0 || pos_ == bytes_.size()) {
      return 0;
    }
    static_cast<char*>(dst)[0] = bytes_[pos_++];
    return 1;
  }
  const std::string& name() const override { return name_; }

 private:
  std::string bytes_;
  std::string name_ = "trickle";
  size_t pos_ = 0;
};

// Serves some bytes, then fails like a disk error.
class FailingSource : public ByteSource {
 public:
  explicit FailingSource(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t read(void* dst, size_t n) override {
    if (done_) {
      throw DataError("cannot read 'failing': Input/output error");
    }
    done_ = true;
    size_t k = std::min(n, bytes_.size());
    std::copy(bytes_.data(), bytes_.data() + k, static_cast<char*>(dst));
    return k;
  }
  const std::string& name() const override { return name_; }

 private:
  std::string bytes_;
  std::string name_ = "failing";
  bool done_ = false;
};

TEST(TFRecordFramingTest, GoldenBytesOfAbc) {
  // length 3 as uint64 LE:            03 00 00 00 00 00 00 00
  // crc32c(those 8 bytes) = 0x576C35E3, masked:
  //   ((0x576C35E3 >> 15) | (0x576C35E3 << 17)) + 0xA282EAD8 = 0x0E4999B0
  //                                   -> b0 99 49 0e
  // data:                              61 62 63
  // crc32c("abc") = 0x364B3FB7, masked = 0x21F1576E -> 6e 57 f1 21
  EXPECT_EQ(crc32c("abc", 3), 0x364B3FB7u);
  EXPECT_EQ(mask_crc(0x364B3FB7u), 0x21F1576Eu);
  EXPECT_EQ(mask_crc(0x576C35E3u), 0x0E4999B0u);
  EXPECT_EQ(frame_record("abc"), bytes({0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb0, 0x99,
                                        0x49, 0x0e, 0x61, 0x62, 0x63, 0x6e, 0x57, 0xf1, 0x21}));
}

TEST(TFRecordFramingTest, GoldenBytesOfEmptyRecord) {
  // crc32c(8 zero bytes) = 0x8C28B28A, masked = 0x07980329;
  // crc32c("") = 0, masked = 0xA282EAD8.
  EXPECT_EQ(crc32c(std::string(8, '\0').data(), 8), 0x8C28B28Au);
  EXPECT_EQ(frame_record(""), bytes({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x03,
                                     0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2}));
}

TEST(TFRecordReaderTest, MemoryRoundTripWithOffsets) {
  auto records = varied_records();
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  TFRecordReader reader(memory_source(file, "mem"));
  std::string record;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(reader.next(&record)) << i;
    EXPECT_EQ(record, records[i]) << i;
    EXPECT_EQ(reader.record_offset(), offsets[i]) << i;
  }
  EXPECT_FALSE(reader.next(&record));
  EXPECT_FALSE(reader.next(&record));
  EXPECT_EQ(reader.stats().records, records.size());
  EXPECT_EQ(reader.stats().skipped, 0u);
  EXPECT_EQ(reader.name(), "mem");
}

TEST(TFRecordReaderTest, ShortReadsFromSource) {
  std::vector<std::string> records = {"", "x", make_record(300, 9), "end"};
  TFRecordReader reader(std::make_unique<TrickleSource>(frame_all(records)));
  EXPECT_EQ(read_all(&reader), records);
}

TEST(TFRecordReaderTest, EmptySourceIsCleanEof) {
  TFRecordReader reader(memory_source("", "empty"));
  std::string record = "stale";
  EXPECT_FALSE(reader.next(&record));
  EXPECT_EQ(reader.stats().records, 0u);
}

TEST(TFRecordReaderTest, FlippedDataByteNamesFileRecordAndOffset) {
  std::vector<std::string> records = {"first", "second", "third record", "fourth"};
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  file[offsets[2] + 12 + 4] ^= 0x01;
  std::string msg = error_of(file);
  EXPECT_TRUE(contains(msg, "data.tfrecord: record 2 at offset " + std::to_string(offsets[2]) +
                                ": data CRC mismatch (stored 0x"));
  EXPECT_TRUE(contains(msg, ", computed 0x"));
}

TEST(TFRecordReaderTest, FlippedDataCrcByteIsDataCrcError) {
  std::string file = frame_all({"aaa", "bbb"});
  file[file.size() - 1] ^= 0x80;
  EXPECT_TRUE(contains(error_of(file), "record 1 at offset 19: data CRC"));
}

TEST(TFRecordReaderTest, FlippedLengthByteIsLengthCrcError) {
  std::vector<uint64_t> offsets;
  std::string file = frame_all({"one", "two", "three"}, &offsets);
  file[offsets[1]] ^= 0x04;
  EXPECT_TRUE(contains(error_of(file), "data.tfrecord: record 1 at offset " +
                                           std::to_string(offsets[1]) + ": length CRC mismatch"));
}

TEST(TFRecordReaderTest, HugeLengthWithBadCrcIsLengthCrcError) {
  std::string file = frame_all({"ok"});
  std::string header = frame_record("");
  header[7] = 0x40;  // length 2^62, length CRC now wrong
  file += header;
  EXPECT_TRUE(contains(error_of(file), "record 1 at offset 18: length CRC"));
}

TEST(TFRecordReaderTest, HugeLengthWithValidCrcIsTruncationNotAllocation) {
  // A CRC-valid 1 TiB length followed by 10 bytes: the reader must report
  // truncation after reading what is there, not try to allocate 1 TiB.
  std::string framed = frame_record(std::string(10, 'z'));
  std::string file = framed.substr(0, 8);
  file[0] = 0;
  file[5] = 0x01;  // 2^40
  char crc[4];
  uint32_t masked = mask_crc(crc32c(file.data(), 8));
  for (int i = 0; i < 4; ++i) {
    crc[i] = static_cast<char>(masked >> (8 * i));
  }
  file.append(crc, 4);
  file += std::string(10, 'z');
  EXPECT_TRUE(contains(error_of(file),
                       "record 0 at offset 0: truncated record (header says "
                       "1099511627776 bytes, file ends after 10)"));
}

TEST(TFRecordReaderTest, TruncationAtEveryCutPoint) {
  std::vector<std::string> records = {"alpha", "", "gamma-gamma"};
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  offsets.push_back(file.size());
  for (size_t cut = 0; cut <= file.size(); ++cut) {
    size_t complete = 0;
    while (complete + 1 < offsets.size() && offsets[complete + 1] <= cut) {
      ++complete;
    }
    const bool at_boundary = offsets[complete] == cut;
    std::string part = file.substr(0, cut);

    std::string msg = error_of(part);
    if (at_boundary) {
      EXPECT_EQ(msg, "") << "cut " << cut;
    } else {
      EXPECT_TRUE(contains(msg, "truncated")) << "cut " << cut;
      EXPECT_TRUE(contains(msg, "at offset " + std::to_string(offsets[complete]))) << "cut " << cut;
    }

    TFRecordReader reader(memory_source(part, "part"), skip_policy());
    auto got = read_all(&reader);
    ASSERT_EQ(got.size(), complete) << "cut " << cut;
    for (size_t i = 0; i < complete; ++i) {
      EXPECT_EQ(got[i], records[i]);
    }
    EXPECT_EQ(reader.stats().skipped, at_boundary ? 0u : 1u) << "cut " << cut;
    EXPECT_EQ(reader.stats().skipped_bytes, cut - offsets[complete]);
  }
}

TEST(TFRecordReaderTest, TruncationMessages) {
  std::string file = frame_all({"0123456789"});
  EXPECT_TRUE(contains(error_of(file.substr(0, 5)),
                       "record 0 at offset 0: truncated header (5 of 12 bytes)"));
  EXPECT_TRUE(contains(error_of(file.substr(0, 16)),
                       "truncated record (header says 10 bytes, file ends "
                       "after 4)"));
  EXPECT_TRUE(contains(error_of(file.substr(0, 24)), "truncated record (data CRC: 2 of 4 bytes)"));
}

TEST(TFRecordReaderTest, SkipPolicyContinuesPastDataCrcErrors) {
  std::vector<std::string> records;
  for (int i = 0; i < 10; ++i) {
    records.push_back("record-" + std::to_string(i));
  }
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  file[offsets[3] + 12] ^= 0x20;
  file[offsets[7] + 14] ^= 0x20;
  TFRecordReader reader(memory_source(file, "data.tfrecord"), skip_policy());
  std::string record;
  std::vector<std::string> got;
  while (reader.next(&record)) {
    got.push_back(record);
    size_t i = std::stoi(record.substr(7));
    EXPECT_EQ(reader.record_offset(), offsets[i]);
  }
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[3], "record-4");
  EXPECT_EQ(got[6], "record-8");
  EXPECT_EQ(reader.stats().records, 8u);
  EXPECT_EQ(reader.stats().skipped, 2u);
  EXPECT_EQ(reader.stats().skipped_bytes, 2 * (kRecordOverheadBytes + records[3].size()));
  ASSERT_EQ(reader.skip_reasons().size(), 2u);
  EXPECT_TRUE(contains(
      reader.skip_reasons()[0],
      "data.tfrecord: record 3 at offset " + std::to_string(offsets[3]) + ": data CRC mismatch"));
  EXPECT_TRUE(contains(reader.skip_reasons()[1], "record 7 at offset"));
}

TEST(TFRecordReaderTest, SkipPolicyResyncsAfterFlippedLengthCrc) {
  std::vector<std::string> records(10, "payload");
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  file[offsets[4] + 9] ^= 0x01;  // the stored length CRC
  TFRecordReader reader(memory_source(file, "f"), skip_policy());
  EXPECT_EQ(read_all(&reader).size(), 9u);
  EXPECT_EQ(reader.stats().skipped, 1u);
  EXPECT_EQ(reader.stats().skipped_bytes, offsets[5] - offsets[4]);
  ASSERT_EQ(reader.skip_reasons().size(), 1u);
  EXPECT_TRUE(contains(reader.skip_reasons()[0], "length CRC mismatch"));
}

// 1000 records of 50..249 random bytes.
std::vector<std::string> thousand_records() {
  std::vector<std::string> records;
  for (uint32_t i = 0; i < 1000; ++i) {
    records.push_back(make_record(50 + i * 37 % 200, 7000 + i));
  }
  return records;
}

// Reads everything and checks that exactly records [lost_begin, lost_end)
// are missing, each other record at its own offset.
void expect_all_but(TFRecordReader* reader, const std::vector<std::string>& records,
                    const std::vector<uint64_t>& offsets, size_t lost_begin, size_t lost_end) {
  std::string record;
  size_t i = 0;
  while (reader->next(&record)) {
    if (i == lost_begin) {
      i = lost_end;
    }
    ASSERT_LT(i, records.size());
    EXPECT_EQ(record, records[i]) << i;
    EXPECT_EQ(reader->record_offset(), offsets[i]) << i;
    ++i;
  }
  EXPECT_EQ(i, records.size());
  EXPECT_EQ(reader->stats().records, records.size() - (lost_end - lost_begin));
  EXPECT_EQ(reader->stats().skipped, 1u);
  EXPECT_EQ(reader->stats().skipped_bytes, offsets[lost_end] - offsets[lost_begin]);
  EXPECT_EQ(reader->stats().skipped_truncated, 0u);
}

TEST(TFRecordReaderTest, SkipPolicyResyncsAfterFlippedLengthBit) {
  // Only record 10 is lost: not all 990 records after the flipped bit under
  // one skip.
  const auto records = thousand_records();
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  offsets.push_back(file.size());
  file[offsets[10] + 1] ^= 0x10;  // a bit of record 10's length
  TFRecordReaderOptions options;  // default max_skipped_share: 0.1 % is fine
  options.skip_corrupt = true;
  {
    TFRecordReader reader(memory_source(file, "data.tfrecord"), options);
    expect_all_but(&reader, records, offsets, 10, 11);
    EXPECT_EQ(reader.stats().skipped_bytes, kRecordOverheadBytes + records[10].size());
    ASSERT_EQ(reader.skip_reasons().size(), 1u);
    EXPECT_TRUE(contains(reader.skip_reasons()[0], "data.tfrecord: record 10 at offset " +
                                                       std::to_string(offsets[10]) +
                                                       ": length CRC mismatch"));
    EXPECT_TRUE(contains(reader.skip_reasons()[0],
                         "; " + std::to_string(offsets[11] - offsets[10]) + " bytes skipped"));
  }
  // The same through one-byte reads, so the look-ahead refills often.
  TFRecordReader trickle(std::make_unique<TrickleSource>(file), options);
  expect_all_but(&trickle, records, offsets, 10, 11);
  // The fail policy is unchanged.
  EXPECT_TRUE(contains(error_of(file), "data.tfrecord: record 10 at offset " +
                                           std::to_string(offsets[10]) + ": length CRC mismatch"));
}

TEST(TFRecordReaderTest, SkipPolicyResyncsAfterBytesInsertedIntoData) {
  // Record 5's header is intact, its data CRC fails and what follows is not
  // a header: the reader must not trust record 5's length.
  const auto records = thousand_records();
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  file.insert(offsets[5] + 12 + 3, "xyz");
  for (size_t i = 6; i < offsets.size(); ++i) {
    offsets[i] += 3;
  }
  offsets.push_back(file.size());
  TFRecordReader reader(memory_source(file, "data.tfrecord"), skip_policy());
  expect_all_but(&reader, records, offsets, 5, 6);
  ASSERT_EQ(reader.skip_reasons().size(), 1u);
  EXPECT_TRUE(contains(reader.skip_reasons()[0],
                       "record 5 at offset " + std::to_string(offsets[5]) + ": data CRC mismatch"));
}

TEST(TFRecordReaderTest, SkipPolicyFailsWhenMoreThanMaxSkippedShareIsLost) {
  const auto records = thousand_records();
  std::vector<uint64_t> offsets;
  std::string file = frame_all(records, &offsets);
  offsets.push_back(file.size());
  // Garbage from inside record 100 to inside record 300: records 100..300.
  std::mt19937 rng(42);
  for (uint64_t i = offsets[100] + 20; i < offsets[300] + 5; ++i) {
    file[i] = static_cast<char>(rng());
  }
  const uint64_t lost = offsets[301] - offsets[100];
  char share[32];
  std::snprintf(share, sizeof(share), "(%.1f %%)",
                100 * (static_cast<double>(lost) / static_cast<double>(file.size())));
  ASSERT_GT(lost, file.size() / 10);

  const std::string msg = error_of(file, skip_policy(0.1));
  EXPECT_TRUE(contains(msg, "data.tfrecord: " + std::to_string(lost) + " of " +
                                std::to_string(file.size()) + " bytes " + share +
                                " skipped as corrupt"));
  EXPECT_TRUE(contains(msg, "max_skipped_share = 0.1"));
  EXPECT_TRUE(contains(msg, "record 100 at offset " + std::to_string(offsets[100])));

  EXPECT_EQ(error_of(file, skip_policy(0.5)), "");
  TFRecordReader reader(memory_source(file, "data.tfrecord"), skip_policy(1));
  expect_all_but(&reader, records, offsets, 100, 301);
}

TEST(TFRecordReaderTest, MaxSkippedShareOutsideUnitIntervalIsRejected) {
  EXPECT_THROW(TFRecordReader(memory_source("", "f"), skip_policy(1.5)), std::invalid_argument);
  EXPECT_THROW(TFRecordReader(memory_source("", "f"), skip_policy(-0.1)), std::invalid_argument);
}

TEST(TFRecordReaderTest, SkipReasonsAreCapped) {
  std::string file;
  for (int i = 0; i < 150; ++i) {
    std::string framed = frame_record("r");
    framed[12] = 's';
    file += framed;
  }
  file += frame_record("last");
  TFRecordReader reader(memory_source(file, "f"), skip_policy());
  EXPECT_EQ(read_all(&reader), std::vector<std::string>{"last"});
  EXPECT_EQ(reader.stats().skipped, 150u);
  EXPECT_EQ(reader.skip_reasons().size(), TFRecordReader::kMaxSkipReasons);
}

TEST(TFRecordReaderTest, IoErrorsThrowEvenUnderSkipPolicy) {
  TFRecordReader reader(std::make_unique<FailingSource>(frame_all({"a"}) + "\x01\x02"),
                        skip_policy());
  std::string record;
  EXPECT_THROW(
      {
        while (reader.next(&record)) {
        }
      },
      DataError);
}

TEST(TFRecordReaderTest, GzipFileGetsAHint) {
  std::string file = bytes({0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0});
  EXPECT_TRUE(contains(error_of(file), "looks GZIP-compressed"));
}

TEST_F(TFRecordFileTest, WriterReaderFileRoundTrip) {
  auto records = varied_records();
  for (int i = 0; i < 500; ++i) {
    records.push_back(make_record(i * 7 % 300, 1000 + i));
  }
  const std::string file = path("data.tfrecord");
  {
    TFRecordWriter writer(file);
    for (const auto& r : records) {
      writer.write(r);
    }
    writer.close();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"data.tfrecord"});
  EXPECT_EQ(read_file(file), frame_all(records));
  TFRecordReader reader(open_file(file));
  EXPECT_EQ(read_all(&reader), records);
  EXPECT_EQ(reader.name(), file);
}

TEST_F(TFRecordFileTest, CorruptFileErrorNamesPath) {
  const std::string file = path("bad.tfrecord");
  std::string framed = frame_all({"a", "bb", "ccc"});
  framed[12 + 1 + 4 + 12] ^= 0xFF;
  write_file_atomic(file, framed);
  TFRecordReader reader(open_file(file));
  std::string record;
  ASSERT_TRUE(reader.next(&record));
  try {
    reader.next(&record);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(), file + ": record 1 at offset 17"));
  }
}

TEST_F(TFRecordFileTest, WriterWithoutCloseLeavesNothing) {
  const std::string file = path("out.tfrecord");
  {
    TFRecordWriter writer(file);
    writer.write("abc");
    EXPECT_EQ(entries().size(), 1u);  // the temporary file
  }
  EXPECT_TRUE(entries().empty());
}

TEST_F(TFRecordFileTest, WriterReplacesExistingFileOnClose) {
  const std::string file = path("out.tfrecord");
  write_file_atomic(file, "old contents");
  TFRecordWriter writer(file);
  writer.write("new");
  EXPECT_EQ(read_file(file), "old contents");
  writer.close();
  writer.close();
  EXPECT_EQ(read_file(file), frame_record("new"));
  EXPECT_THROW(writer.write("late"), std::logic_error);
}

TEST_F(TFRecordFileTest, WriterErrorNamesPath) {
  const std::string file = path("missing-dir/out.tfrecord");
  try {
    TFRecordWriter writer(file);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(), file));
    EXPECT_TRUE(contains(e.what(), "No such file or directory"));
  }
}

TEST_F(TFRecordFileTest, OpenMissingFileIsDataError) {
  const std::string file = path("nope.tfrecord");
  try {
    open_file(file);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open '" + file + "': No such file or directory");
  }
  EXPECT_THROW(read_file(file), DataError);
}

TEST_F(TFRecordFileTest, AtomicFileRoundTripAndOverwrite) {
  const std::string file = path("ckpt");
  std::string big = make_record((size_t{3} << 20) + 11, 5);
  write_file_atomic(file, big);
  EXPECT_EQ(read_file(file), big);
  write_file_atomic(file, "");
  EXPECT_EQ(read_file(file), "");
  write_file_atomic(file, "small");
  EXPECT_EQ(read_file(file), "small");
  EXPECT_EQ(entries(), std::vector<std::string>{"ckpt"});
}

TEST_F(TFRecordFileTest, AtomicFileWriterStreams) {
  const std::string file = path("stream");
  std::string expected;
  {
    AtomicFileWriter writer(file);
    for (int i = 0; i < 100; ++i) {
      std::string chunk = make_record(i * 997, i);
      writer.append(chunk);
      expected += chunk;
    }
    writer.append(make_record(2 << 20, 77));
    expected += make_record(2 << 20, 77);
    writer.commit();
  }
  EXPECT_EQ(read_file(file), expected);
}

// Writes 4 MiB under a 1 MiB RLIMIT_FSIZE: write() fails with EFBIG, standing
// in for a full disk. Returns whether the error was reported as it should be.
bool write_past_file_size_limit(const std::string& file) {
  signal(SIGXFSZ, SIG_IGN);
  rlimit limit{1 << 20, 1 << 20};
  setrlimit(RLIMIT_FSIZE, &limit);
  try {
    TFRecordWriter writer(file);
    for (int i = 0; i < 64; ++i) {
      writer.write(std::string(64 << 10, 'x'));
    }
    writer.close();
  } catch (const DataError& e) {
    std::string msg = e.what();
    return msg.find("cannot write '" + file + "'") != std::string::npos &&
           msg.find("File too large") != std::string::npos;
  }
  return false;
}

TEST_F(TFRecordFileTest, WriteErrorIsDataErrorAndLeavesNoFile) {
  const std::string file = path("big.tfrecord");
  EXPECT_EXIT(std::exit(write_past_file_size_limit(file) && entries().empty() ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace fastnn::io
