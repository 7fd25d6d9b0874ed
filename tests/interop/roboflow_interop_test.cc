// Interoperability with an independent TFRecord + tf.train.Example
// implementation, the npm package @roboflow/tfrecords (installed into the
// build tree on first run: needs npm and the npm registry):
//   (a) records it writes read here: framing, Example, PNG, label, size;
//   (b) files convert_dataset writes read there, field for field.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <sstream>

#include "fastnn/example.h"
#include "fastnn/tfrecord.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {
namespace fs = std::filesystem;
using testing::run;

const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "interop";
const fs::path kNpm = fs::path(FASTNN_BIN_DIR).parent_path() / "npm";
const std::string kScript = std::string(FASTNN_SOURCE_DIR) + "/tests/interop/roboflow_tfrecords.js";

testing::ProcessResult node(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {"/usr/bin/env", "NODE_PATH=" + (kNpm / "node_modules").string(),
                                   "node", kScript};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, (kTmp / log).string());
}

class Roboflow : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::create_directories(kTmp);
    if (fs::exists(kNpm / "node_modules/@roboflow/tfrecords/package.json")) return;
    auto r = run({"/usr/bin/env", "npm", "install", "--prefix", kNpm.string(),
                  "@roboflow/tfrecords@1.0.4", "--no-audit", "--no-fund"},
                 (kTmp / "npm_install.log").string());
    ASSERT_EQ(r.exit_code, 0) << "npm install @roboflow/tfrecords failed:\n" << r.output;
  }
};

uint32_t crc_of(const std::string& s) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

TEST_F(Roboflow, WeReadWhatItWrites) {
  const std::string file = (kTmp / "roboflow.tfrecord").string();
  auto w = node({"write", file, "6"}, "write.log");
  ASSERT_EQ(w.exit_code, 0) << w.output;
  io::TFRecordReader reader(io::open_file(file));
  std::string rec;
  int i = 0;
  for (; reader.next(&rec); ++i) {
    const io::ImageRecord ex = io::decode_image_example(rec);
    EXPECT_EQ(ex.label, (3 * i) % 10);
    EXPECT_EQ(ex.height, 5 + i);
    EXPECT_EQ(ex.width, 7 + 2 * i);
    EXPECT_EQ(ex.format, "png");
    const io::Image img = io::decode_image(ex.encoded);
    ASSERT_EQ(img.height, 5 + i);
    ASSERT_EQ(img.width, 7 + 2 * i);
    ASSERT_EQ(img.channels, 3);
    for (int y = 0; y < img.height; ++y) {
      for (int x = 0; x < img.width; ++x) {
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(img.pixels[(size_t(y) * img.width + x) * 3 + c],
                    (31 * i + 7 * y + 3 * x + 50 * c) & 255);
        }
      }
    }
  }
  EXPECT_EQ(i, 6);
  EXPECT_EQ(reader.stats().skipped, 0);
}

TEST_F(Roboflow, ItReadsWhatConvertDatasetWrites) {
  // A small image folder: JPEGs and PNGs of assorted sizes in 2 classes.
  const fs::path in = kTmp / "folder";
  fs::remove_all(in);
  for (int n = 0; n < 6; ++n) {
    io::Image img;
    img.height = 9 + n;
    img.width = 12 + 3 * n;
    img.channels = 3;
    for (int k = 0; k < img.height * img.width * 3; ++k) {
      img.pixels.push_back(static_cast<uint8_t>(k * 7 + n));
    }
    const fs::path dir = in / (n % 2 ? "cats" : "dogs");
    fs::create_directories(dir);
    if (n % 3 == 0) {
      io::write_file_atomic((dir / ("i" + std::to_string(n) + ".png")).string(),
                            io::encode_png(img));
    } else {
      io::write_file_atomic((dir / ("i" + std::to_string(n) + ".jpg")).string(),
                            io::encode_jpeg(img, 90));
    }
  }
  const fs::path out = kTmp / "converted";
  fs::remove_all(out);
  auto c = run({std::string(FASTNN_BIN_DIR) + "/convert_dataset", "--dataset_name", "image_folder",
                "--input", in.string(), "--dataset_dir", out.string(), "--num_shards", "2",
                "--validation_fraction", "0", "--quiet"},
               (kTmp / "convert.log").string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  int total = 0;
  for (int shard = 0; shard < 2; ++shard) {
    const std::string file =
        (out / ("image_folder_train_0000" + std::to_string(shard) + "-of-00002.tfrecord")).string();
    // What we wrote, as JSON lines in the script's format.
    std::ostringstream expected;
    io::TFRecordReader reader(io::open_file(file));
    for (std::string rec; reader.next(&rec); ++total) {
      const io::ImageRecord ex = io::decode_image_example(rec);
      expected << "{\"label\":" << ex.label << ",\"height\":" << ex.height
               << ",\"width\":" << ex.width << ",\"format\":\"" << ex.format
               << "\",\"size\":" << ex.encoded.size() << ",\"crc\":" << crc_of(ex.encoded) << "}\n";
    }
    auto r = node({"read", file}, "read" + std::to_string(shard) + ".log");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, expected.str());
  }
  EXPECT_EQ(total, 6);
}

}  // namespace
}  // namespace fastnn
