#include "fastnn/example.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/example.pb.h"
#include "src/io/protobuf_log.h"

namespace fastnn::io {
namespace {

using tfproto::Example;
using tfproto::Feature;

std::string error_of(const std::string& bytes, const ExampleKeys& keys = {}) {
  try {
    decode_image_example(bytes, keys);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

Feature& feature(Example* ex, const std::string& key) {
  return (*ex->mutable_features()->mutable_feature())[key];
}

// A minimal valid example built with the generated classes, to be broken by
// individual tests.
Example base_example() {
  Example ex;
  feature(&ex, "image/encoded").mutable_bytes_list()->add_value("PNGDATA");
  feature(&ex, "image/format").mutable_bytes_list()->add_value("png");
  feature(&ex, "image/class/label").mutable_int64_list()->add_value(4);
  return ex;
}

std::string serialize(const Example& ex) {
  std::string out;
  ex.SerializeToString(&out);
  return out;
}

TEST(ExampleTest, RoundTrip) {
  ImageRecord r;
  r.encoded = std::string("\x89PNG\0\x01\xff", 7);
  r.format = "png";
  r.label = 9;
  r.height = 28;
  r.width = 28;
  ImageRecord back = decode_image_example(encode_image_example(r));
  EXPECT_EQ(back.encoded, r.encoded);
  EXPECT_EQ(back.format, "png");
  EXPECT_EQ(back.label, 9);
  EXPECT_EQ(back.height, 28);
  EXPECT_EQ(back.width, 28);
}

TEST(ExampleTest, RoundTripExtremeValues) {
  ImageRecord r;
  r.encoded = std::string(100000, '\x7f');
  r.label = -1;
  r.height = INT64_MAX;
  r.width = INT64_MIN;
  ImageRecord back = decode_image_example(encode_image_example(r));
  EXPECT_EQ(back.encoded, r.encoded);
  EXPECT_EQ(back.format, "");
  EXPECT_EQ(back.label, -1);
  EXPECT_EQ(back.height, INT64_MAX);
  EXPECT_EQ(back.width, INT64_MIN);
}

TEST(ExampleTest, EncodingIsDeterministicAndUsesTfSlimKeys) {
  ImageRecord r{"bytes", "jpeg", 3, 10, 20};
  std::string a = encode_image_example(r);
  EXPECT_EQ(a, encode_image_example(r));
  Example ex;
  ASSERT_TRUE(ex.ParseFromString(a));
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f.at("image/encoded").bytes_list().value(0), "bytes");
  EXPECT_EQ(f.at("image/format").bytes_list().value(0), "jpeg");
  EXPECT_EQ(f.at("image/class/label").int64_list().value(0), 3);
  EXPECT_EQ(f.at("image/height").int64_list().value(0), 10);
  EXPECT_EQ(f.at("image/width").int64_list().value(0), 20);
}

// Wire bytes derived by hand from TensorFlow's example.proto/feature.proto
// field numbers (tag = field << 3 | wire type; 2 = length-delimited):
//   Example.features (1)            0a 2c <Features, 44 bytes>
//   Features.feature (1) map entry  0a 1a <entry, 26 bytes>
//     key (1)   0a 11 "image/class/label"
//     value (2) 12 05 <Feature>: int64_list (3) 1a 03 <Int64List>:
//               value (1, packed) 0a 01 07                    -> label 7
//   Features.feature (1) map entry  0a 0e <entry, 14 bytes>
//     key (1)   0a 05 "image"  (a custom key, see ExampleKeys below)
//     value (2) 12 05 <Feature>: bytes_list (1) 0a 03 <BytesList>:
//               value (1) 0a 01 'P'
TEST(ExampleTest, DecodesHandWrittenWireBytes) {
  const std::string entry_label =
      std::string("\x0a\x11") + "image/class/label" + "\x12\x05\x1a\x03\x0a\x01\x07";
  const std::string entry_image = std::string("\x0a\x05") + "image" + "\x12\x05\x0a\x03\x0a\x01P";
  ASSERT_EQ(entry_label.size(), 26u);
  ASSERT_EQ(entry_image.size(), 14u);
  const std::string features = "\x0a\x1a" + entry_label + "\x0a\x0e" + entry_image;
  ASSERT_EQ(features.size(), 44u);
  const std::string example = "\x0a\x2c" + features;
  ExampleKeys keys;
  keys.encoded = "image";
  ImageRecord r = decode_image_example(example, keys);
  EXPECT_EQ(r.encoded, "P");
  EXPECT_EQ(r.label, 7);
  EXPECT_EQ(r.height, 0);
  EXPECT_EQ(r.format, "");
}

TEST(ExampleTest, UnpackedInt64ListIsAccepted) {
  // Int64List.value written unpacked (tag 08, varint 05), as old writers may.
  const std::string label_entry =
      std::string("\x0a\x11") + "image/class/label" + "\x12\x04\x1a\x02\x08\x05";
  Example ex = base_example();
  ex.mutable_features()->mutable_feature()->erase("image/class/label");
  std::string bytes = serialize(ex);
  // Append a second Example.features chunk; protobuf merges repeated message
  // fields, so the map gains the unpacked label entry.
  bytes += "\x0a" + std::string(1, static_cast<char>(label_entry.size() + 2)) + "\x0a" +
           std::string(1, static_cast<char>(label_entry.size())) + label_entry;
  EXPECT_EQ(decode_image_example(bytes).label, 5);
}

TEST(ExampleTest, LabelAsSingleElementList) {
  Example ex = base_example();
  EXPECT_EQ(decode_image_example(serialize(ex)).label, 4);
  feature(&ex, "image/class/label").mutable_int64_list()->add_value(5);
  EXPECT_EQ(error_of(serialize(ex)), "feature 'image/class/label' has 2 values, expected 1");
  feature(&ex, "image/class/label").mutable_int64_list()->clear_value();
  EXPECT_EQ(error_of(serialize(ex)), "feature 'image/class/label' has 0 values, expected 1");
}

TEST(ExampleTest, WrongTypes) {
  Example ex = base_example();
  feature(&ex, "image/encoded").mutable_int64_list()->add_value(1);
  EXPECT_EQ(error_of(serialize(ex)), "feature 'image/encoded' is int64_list, expected bytes_list");

  ex = base_example();
  feature(&ex, "image/class/label").mutable_float_list()->add_value(1.0f);
  EXPECT_EQ(error_of(serialize(ex)),
            "feature 'image/class/label' is float_list, expected int64_list");

  ex = base_example();
  feature(&ex, "image/height").mutable_bytes_list()->add_value("28");
  EXPECT_EQ(error_of(serialize(ex)), "feature 'image/height' is bytes_list, expected int64_list");

  ex = base_example();
  feature(&ex, "image/format").Clear();
  EXPECT_EQ(error_of(serialize(ex)),
            "feature 'image/format' is empty (no value list), expected "
            "bytes_list");
}

TEST(ExampleTest, MissingKeys) {
  Example ex = base_example();
  ex.mutable_features()->mutable_feature()->erase("image/class/label");
  EXPECT_EQ(error_of(serialize(ex)), "missing feature 'image/class/label'");

  ex = base_example();
  ex.mutable_features()->mutable_feature()->erase("image/encoded");
  EXPECT_EQ(error_of(serialize(ex)), "missing feature 'image/encoded'");

  EXPECT_EQ(error_of(""), "missing feature 'image/encoded'");

  ex = base_example();
  ex.mutable_features()->mutable_feature()->erase("image/format");
  ImageRecord r = decode_image_example(serialize(ex));
  EXPECT_EQ(r.format, "");
  EXPECT_EQ(r.height, 0);
  EXPECT_EQ(r.width, 0);
}

TEST(ExampleTest, CustomKeys) {
  Example ex;
  feature(&ex, "img").mutable_bytes_list()->add_value("raw");
  feature(&ex, "label").mutable_int64_list()->add_value(11);
  ExampleKeys keys;
  keys.encoded = "img";
  keys.label = "label";
  ImageRecord r = decode_image_example(serialize(ex), keys);
  EXPECT_EQ(r.encoded, "raw");
  EXPECT_EQ(r.label, 11);
  EXPECT_EQ(error_of(serialize(ex)), "missing feature 'image/encoded'");
}

TEST(ExampleTest, GarbageBytes) {
  EXPECT_EQ(error_of("\xff\xff\xff\xff"), "not a tf.train.Example (protobuf parse failed)");
  std::string good = encode_image_example({"data", "png", 1, 2, 3});
  EXPECT_EQ(error_of(good.substr(0, good.size() - 3)),
            "not a tf.train.Example (protobuf parse failed)");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) {
      c = static_cast<char>(rng());
    }
    EXPECT_THROW(decode_image_example(junk), DataError);
  }
}

// A record whose feature key is not UTF-8 fails to parse, and libprotobuf
// logs an ERROR line for it. Routed, each distinct line shows 3 times, then
// once more saying the rest are not shown: a damaged dataset of thousands
// of such records prints 4 lines, not thousands. (The counts live for the
// process: this is the only test here that routes the log.)
TEST(ProtobufLog, ARepeatedLineShowsThreeTimesThenOnceMore) {
  route_protobuf_log();
  Example ex;
  feature(&ex, "zz").mutable_int64_list()->add_value(1);
  std::string bytes = ex.SerializeAsString();
  const auto at = bytes.find("zz");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 2, "\xff\xfe");
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(error_of(bytes).empty()) << i;
  const std::string err = ::testing::internal::GetCapturedStderr();
  auto count = [&](const std::string& what) {
    int n = 0;
    for (auto p = err.find(what); p != std::string::npos; p = err.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("libprotobuf: "), kProtobufRepeatsShown + 1) << err;
  EXPECT_EQ(count("UTF-8"), kProtobufRepeatsShown + 1) << err;
  EXPECT_EQ(count("further repeats are not shown"), 1) << err;
}

}  // namespace
}  // namespace fastnn::io
