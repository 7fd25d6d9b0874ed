// convert_dataset's converters on small generated inputs: TF-slim file
// names, shard balance, labels.txt, record contents, determinism across
// thread counts, refusal to overwrite, and no partial output on failure.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "datasets/convert_cifar10.h"
#include "datasets/convert_common.h"
#include "datasets/convert_image_folder.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "fastnn/tfrecord.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"
#include "tests/test_paths.h"

namespace fastnn::datasets {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(FASTNN_TEST_TMP) / "convert" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<io::ImageRecord> read_records(const std::string& path) {
  io::TFRecordReader r(io::open_file(path));
  std::vector<io::ImageRecord> out;
  for (std::string rec; r.next(&rec);) out.push_back(io::decode_image_example(rec));
  return out;
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// n CIFAR-10 binary records; record i has label i % 10 and pixel bytes
// derived from (i, position).
std::string cifar_records(int n, int first) {
  std::string out;
  for (int i = first; i < first + n; ++i) {
    out.push_back(static_cast<char>(i % 10));
    for (int p = 0; p < 3072; ++p) out.push_back(static_cast<char>((i * 7 + p) & 0xFF));
  }
  return out;
}

// data_batch_1..5 with 3, 2, 2, 2, 2 records (11 train), test_batch with 4.
fs::path cifar_input(const std::string& name, bool meta) {
  fs::path in = fresh_dir(name) / "cifar-10-batches-bin";
  fs::create_directories(in);
  int first = 0;
  for (int b = 1; b <= 5; ++b) {
    const int n = b == 1 ? 3 : 2;
    io::write_file_atomic((in / ("data_batch_" + std::to_string(b) + ".bin")).string(),
                          cifar_records(n, first));
    first += n;
  }
  io::write_file_atomic((in / "test_batch.bin").string(), cifar_records(4, 100));
  if (meta) {
    std::string names;
    for (int i = 0; i < 10; ++i) names += "class" + std::to_string(i) + "\n";
    io::write_file_atomic((in / "batches.meta.txt").string(), names + "\n");
  }
  return in.parent_path();
}

TEST(ConvertDataset, ShardNamesFollowTfSlim) {
  EXPECT_EQ(shard_file_name("mnist", "train", 0, 1), "mnist_train.tfrecord");
  EXPECT_EQ(shard_file_name("flowers", "validation", 3, 5),
            "flowers_validation_00003-of-00005.tfrecord");
}

TEST(ConvertDataset, Cifar10ShardsLabelsAndPixels) {
  const fs::path in = cifar_input("cifar_in", true);
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  o.num_shards = 3;
  o.num_threads = 2;
  const auto splits = convert_cifar10(o);
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(splits[0].examples, 11);
  EXPECT_EQ(splits[1].examples, 4);
  EXPECT_EQ(listing(o.output_dir),
            (std::vector<std::string>{
                "cifar10.manifest", "cifar10_test_00000-of-00003.tfrecord",
                "cifar10_test_00001-of-00003.tfrecord", "cifar10_test_00002-of-00003.tfrecord",
                "cifar10_train_00000-of-00003.tfrecord", "cifar10_train_00001-of-00003.tfrecord",
                "cifar10_train_00002-of-00003.tfrecord", "labels.txt"}));
  // 11 over 3 shards: 3, 4, 4 (sizes differ by at most one), in order.
  int i = 0;
  for (int k = 0; k < 3; ++k) {
    const auto recs = read_records(splits[0].paths[k]);
    EXPECT_EQ(recs.size(), k == 0 ? 3u : 4u);
    for (const auto& r : recs) {
      EXPECT_EQ(r.label, i % 10);
      EXPECT_EQ(r.format, "png");
      EXPECT_EQ(r.height, 32);
      EXPECT_EQ(r.width, 32);
      const io::Image img = io::decode_image(r.encoded);
      ASSERT_EQ(img.channels, 3);
      // HWC pixel (y=1, x=2, c=G) came from CHW byte 1024 + 1*32 + 2.
      EXPECT_EQ(img.pixels[(1 * 32 + 2) * 3 + 1], (i * 7 + 1024 + 34) & 0xFF);
      ++i;
    }
  }
  const auto labels = lines(fs::path(o.output_dir) / "labels.txt");
  ASSERT_EQ(labels.size(), 10u);
  EXPECT_EQ(labels[0], "0:class0");
  EXPECT_EQ(labels[9], "9:class9");
}

TEST(ConvertDataset, Cifar10SingleFileAndStandardNames) {
  const fs::path in = cifar_input("cifar_plain", false);
  ConvertOptions o;
  o.input_dir = (in / "cifar-10-batches-bin").string();
  o.output_dir = (in / "out").string();
  o.max_examples = 5;
  convert_cifar10(o);
  EXPECT_EQ(listing(o.output_dir),
            (std::vector<std::string>{"cifar10.manifest", "cifar10_test.tfrecord",
                                      "cifar10_train.tfrecord", "labels.txt"}));
  EXPECT_EQ(read_records((in / "out" / "cifar10_train.tfrecord").string()).size(), 5u);
  EXPECT_EQ(read_records((in / "out" / "cifar10_test.tfrecord").string()).size(), 4u);
  const auto labels = lines(in / "out" / "labels.txt");
  EXPECT_EQ(labels[0], "0:airplane");
  EXPECT_EQ(labels[9], "9:truck");
}

TEST(ConvertDataset, OutputIsTheSameForAnyThreadCount) {
  const fs::path in = cifar_input("cifar_threads", true);
  ConvertOptions o;
  o.input_dir = in.string();
  o.num_shards = 2;
  std::vector<std::string> bytes;
  for (int threads : {1, 3}) {
    o.num_threads = threads;
    o.output_dir = (in / ("out" + std::to_string(threads))).string();
    const auto splits = convert_cifar10(o);
    bytes.push_back(io::read_file(splits[0].paths[1]));
  }
  EXPECT_EQ(bytes[0], bytes[1]);
}

TEST(ConvertDataset, RefusesToOverwriteAndCleansUpOnOverwrite) {
  const fs::path in = cifar_input("cifar_again", true);
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  o.num_shards = 2;
  convert_cifar10(o);
  const std::string before =
      io::read_file((in / "out" / "cifar10_train_00000-of-00002.tfrecord").string());
  try {
    o.num_shards = 1;  // another shard count still collides
    convert_cifar10(o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("labels.txt' exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(io::read_file((in / "out" / "cifar10_train_00000-of-00002.tfrecord").string()), before);
  o.overwrite = true;
  convert_cifar10(o);
  EXPECT_EQ(listing(o.output_dir),
            (std::vector<std::string>{"cifar10.manifest", "cifar10_test.tfrecord",
                                      "cifar10_train.tfrecord", "labels.txt"}));
}

TEST(ConvertDataset, FailureLeavesNoPartialOutput) {
  const fs::path in = cifar_input("cifar_bad", true);
  // The test split has a record whose label byte is 12: train encodes fine,
  // test fails, and nothing may appear.
  std::string bad = cifar_records(4, 100);
  bad[3073 * 2] = 12;
  io::write_file_atomic((in / "cifar-10-batches-bin" / "test_batch.bin").string(), bad);
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  EXPECT_THROW(convert_cifar10(o), DataError);
  EXPECT_TRUE(listing(o.output_dir).empty());
  // A batch of a wrong size names the file.
  io::write_file_atomic((in / "cifar-10-batches-bin" / "data_batch_3.bin").string(), "xyz");
  try {
    convert_cifar10(o);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_3.bin"), std::string::npos);
  }
}

io::Image gradient(int h, int w, int channels) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = channels;
  for (int i = 0; i < h * w * channels; ++i) {
    img.pixels.push_back(static_cast<uint8_t>(i * 13 % 251));
  }
  return img;
}

TEST(ConvertDataset, ImageFolderKeepsBytesAndSplitsDeterministically) {
  const fs::path in = fresh_dir("folder_in");
  // 3 classes, 14 images of assorted sizes and formats, plus entries that
  // must be skipped.
  std::map<std::string, std::pair<std::string, int64_t>> by_bytes;
  const char* classes[] = {"tulips", "daisy", "roses"};  // sorted: d, r, t
  const int64_t label_of[] = {2, 0, 1};
  int n = 0;
  for (int c = 0; c < 3; ++c) {
    fs::create_directories(in / classes[c]);
    for (int k = 0; k < 4 + c; ++k, ++n) {
      const int h = 10 + n, w = 20 + 2 * n;
      std::string bytes, name;
      if (n % 3 == 0) {
        bytes = io::encode_png(gradient(h, w, 3));
        name = "img" + std::to_string(n) + ".png";
      } else if (n % 3 == 1) {
        bytes = io::encode_jpeg(gradient(h, w, 3), 90);
        name = "img" + std::to_string(n) + ".JPG";
      } else {
        // A PNG under a .jpeg name: the format comes from the bytes.
        bytes = io::encode_png(gradient(h, w, 1));
        name = "img" + std::to_string(n) + ".jpeg";
      }
      io::write_file_atomic((in / classes[c] / name).string(), bytes);
      by_bytes[bytes] = {name, label_of[c]};
    }
  }
  io::write_file_atomic((in / "daisy" / "notes.txt").string(), "not an image");
  io::write_file_atomic((in / "daisy" / ".hidden.jpg").string(), "junk");
  fs::create_directories(in / ".cache");

  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in.parent_path() / "folder_out").string();
  fs::remove_all(o.output_dir);
  o.num_shards = 2;
  o.validation_fraction = 0.25;
  o.validation_split_seed = 7;
  o.prefix = "flowers";
  const auto splits = convert_image_folder(o);
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(splits[0].split, "train");
  EXPECT_EQ(splits[1].split, "validation");
  EXPECT_EQ(splits[1].examples, 4);  // round(15 * 0.25)
  EXPECT_EQ(splits[0].examples + splits[1].examples, n);
  EXPECT_EQ(lines(fs::path(o.output_dir) / "labels.txt"),
            (std::vector<std::string>{"0:daisy", "1:roses", "2:tulips"}));
  EXPECT_EQ(splits[0].paths[1],
            (fs::path(o.output_dir) / "flowers_train_00001-of-00002.tfrecord").string());
  int seen = 0;
  for (const auto& s : splits) {
    std::vector<size_t> sizes;
    for (const auto& p : s.paths) {
      const auto recs = read_records(p);
      sizes.push_back(recs.size());
      for (const auto& r : recs) {
        ASSERT_TRUE(by_bytes.count(r.encoded)) << "bytes were re-encoded";
        const auto& [name, label] = by_bytes[r.encoded];
        EXPECT_EQ(r.label, label) << name;
        EXPECT_EQ(r.format, io::sniff_format(r.encoded) == io::ImageFormat::kPng ? "png" : "jpg")
            << name;
        const io::Image img = io::decode_image(r.encoded);
        EXPECT_EQ(r.height, img.height) << name;
        EXPECT_EQ(r.width, img.width) << name;
        ++seen;
      }
    }
    EXPECT_LE(std::max(sizes[0], sizes[1]) - std::min(sizes[0], sizes[1]), 1u);
  }
  EXPECT_EQ(seen, n);

  // Same seed: the same bytes; another seed: another validation set.
  ConvertOptions again = o;
  again.output_dir = o.output_dir + "_again";
  fs::remove_all(again.output_dir);
  EXPECT_EQ(io::read_file(convert_image_folder(again)[1].paths[0]),
            io::read_file(splits[1].paths[0]));
  again.validation_split_seed = 8;
  again.overwrite = true;
  EXPECT_NE(io::read_file(convert_image_folder(again)[1].paths[0]),
            io::read_file(splits[1].paths[0]));

  // An image file that is no image (a GIF's magic, then junk) is named.
  io::write_file_atomic((in / "roses" / "broken.jpg").string(), "GIF89a not really");
  again.output_dir = o.output_dir + "_broken";
  try {
    convert_image_folder(again);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.jpg"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(fs::path(again.output_dir) / "labels.txt"));
}

TEST(ConvertDataset, FolderFlagChecks) {
  const fs::path d = fresh_dir("folder_checks");
  io::write_file_atomic((d / "f").string(), "x");
  auto message = [](const std::string& path) -> std::string {
    try {
      check_folder_flag("--dataset_dir", path);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(d.string()), "");
  EXPECT_EQ(message((d / "new" / "deeper").string()), "");  // created later
  EXPECT_NE(message((d / "f").string()).find("is a file, not a folder"), std::string::npos);
  EXPECT_NE(message((d / "f" / "x").string())
                .find("a part of the path is a "
                      "file, not a folder"),
            std::string::npos);
  EXPECT_NE(message("").find("--dataset_dir: empty"), std::string::npos);
  for (const std::string& path :
       {(d / std::string(300, 'a')).string(), d.string() + "/" + std::string(5000, 'b')}) {
    const std::string m = message(path);
    EXPECT_LT(m.size(), 300u) << m;
    EXPECT_NE(m.find("too long"), std::string::npos) << m;
    EXPECT_NE(m.find("'... ("), std::string::npos) << m;
  }
  // Library use: write_dataset refuses the same way, before writing.
  ConvertOptions o;
  o.output_dir = (d / "f").string();
  EXPECT_THROW(write_dataset(o, {}), ConfigError);
}

// The binary, as a user runs it.
const std::string kTool = std::string(FASTNN_BIN_DIR) + "/convert_dataset";

// Runs convert_dataset with `args` (shell words); its output goes to `log`.
// Returns {exit code, output}.
std::pair<int, std::string> convert(const std::string& args, const fs::path& log) {
  const int st = std::system((kTool + " " + args + " > '" + log.string() + "' 2>&1").c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, io::read_file(log.string())};
}

TEST(ConvertDatasetTool, UnusableDatasetDirIsAUsageError) {
  ASSERT_TRUE(fs::exists(kTool)) << kTool << " is not built";
  const fs::path in = cifar_input("tool_bad_out", true);
  const fs::path file = in / "plain.txt";
  io::write_file_atomic(file.string(), "x");
  std::string deep;  // 20 names of 250 bytes: beyond PATH_MAX
  for (int i = 0; i < 20; ++i) deep += "/" + std::string(250, 'b');
  for (const fs::path& bad :
       {file, file / "sub", in / std::string(300, 'a'), fs::path(in.string() + deep)}) {
    auto [code, out] = convert("--quiet --dataset_name cifar10 --input '" + in.string() +
                                   "' --dataset_dir '" + bad.string() + "'",
                               in / "log.txt");
    EXPECT_EQ(code, 2) << out.substr(0, 300);  // not 1, "internal error"
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out.substr(0, 300);
    EXPECT_LT(out.size(), 300u) << out.substr(0, 300);
    EXPECT_NE(out.find("--dataset_dir '" + bad.string().substr(0, 100)), std::string::npos)
        << out.substr(0, 300);
  }
}

// A pid that no process has: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(ConvertDatasetTool, RemovesStaleTemporariesOfDeadProcessesOnly) {
  ASSERT_TRUE(fs::exists(kTool)) << kTool << " is not built";
  const fs::path in = cifar_input("tool_stale", true);
  const fs::path out = in / "out";
  fs::create_directories(out);
  // What a SIGTERM during an earlier conversion leaves, and a temporary of
  // a process that is still running (this test).
  const std::string stale = "cifar10_train.tfrecord.tmp-" + std::to_string(dead_pid());
  const std::string live = "cifar10_test.tfrecord.tmp-" + std::to_string(getpid());
  io::write_file_atomic((out / stale).string(), "partial");
  io::write_file_atomic((out / live).string(), "in progress");
  auto [code, text] = convert("--quiet --dataset_name cifar10 --input '" + in.string() +
                                  "' --dataset_dir '" + out.string() + "'",
                              in / "log.txt");
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("removed 1 stale temporary file(s)"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(out / stale));
  EXPECT_TRUE(fs::exists(out / live));
  EXPECT_TRUE(fs::exists(out / "cifar10_train.tfrecord"));
}

// A symbolic link loop in the input folder is a data error naming it (not
// exit 1 with std::filesystem's "Too many levels of symbolic links"). A
// dangling link named like an image cannot be read: the same, never left
// out without a word.
// The DataError converting the image folder `in` (into in/out, nothing held
// out for validation) ends in; "" when it converts.
std::string folder_error(const fs::path& in) {
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  o.validation_fraction = 0;
  try {
    convert_image_folder(o);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(ConvertDataset, ImageFolderLinkLoopsAndDanglingLinksAreDataErrors) {
  int round = 0;
  for (const char* bad : {"daisy/loop.png", "loop", "daisy/dangling.png"}) {
    const fs::path in = fresh_dir("folder_links_" + std::to_string(round++));
    fs::create_directories(in / "daisy");
    fs::create_directories(in / "roses");
    io::write_file_atomic((in / "daisy" / "a.png").string(), io::encode_png(gradient(4, 4, 3)));
    io::write_file_atomic((in / "roses" / "b.png").string(), io::encode_png(gradient(4, 4, 3)));
    const bool dangling = std::string(bad).find("dangling") != std::string::npos;
    fs::create_symlink(dangling ? in / "nowhere.png" : in / bad, in / bad);
    const std::string msg = folder_error(in);
    EXPECT_NE(msg.find((in / bad).string()), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find(dangling ? "dangling symbolic link" : "symbolic link"), std::string::npos)
        << msg;
    EXPECT_FALSE(fs::exists(in / "out" / "labels.txt"));
  }
}

// A class folder whose name labels.txt cannot hold (TF-slim's
// read_label_file reads "id:name" lines of UTF-8): refused by name, nothing
// written (not written raw, which TF-slim then fails on).
TEST(ConvertDataset, ImageFolderClassNamesLabelsTxtCannotHoldAreRefused) {
  int round = 0;
  for (const std::string bad : {std::string("two\nlines"), std::string("latin1_\xe9t\xe9")}) {
    const fs::path in = fresh_dir("folder_names_" + std::to_string(round++));
    fs::create_directories(in / bad);
    fs::create_directories(in / "roses");
    io::write_file_atomic((in / bad / "a.png").string(), io::encode_png(gradient(4, 4, 3)));
    io::write_file_atomic((in / "roses" / "b.png").string(), io::encode_png(gradient(4, 4, 3)));
    const std::string msg = folder_error(in);
    EXPECT_NE(msg.find("which labels.txt cannot hold"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(in / "out" / "labels.txt"));
  }
}

// A BMP among the images (TF's decode_image reads it; TF-slim's record
// readers decode JPEG and PNG): stored as the PNG of its pixels.
TEST(ConvertDataset, ImageFolderStoresABmpAsThePngOfItsPixels) {
  const fs::path in = fresh_dir("folder_bmp");
  fs::create_directories(in / "daisy");
  // 2 x 1, 24 bits, bottom-up: a red and a blue pixel, the row padded to 8 bytes.
  std::string bmp = std::string("BM") + std::string(12, '\0');
  bmp[10] = 54;
  std::string info(40, '\0');
  info[0] = 40;
  info[4] = 2;   // width
  info[8] = 1;   // height
  info[12] = 1;  // planes
  info[14] = 24;
  bmp += info + std::string("\x00\x00\xff\xff\x00\x00\x00\x00", 8);
  bmp[2] = static_cast<char>(bmp.size());
  io::write_file_atomic((in / "daisy" / "a.bmp").string(), bmp);
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  o.validation_fraction = 0;
  const auto splits = convert_image_folder(o);
  ASSERT_FALSE(splits.empty());
  const auto records = read_records(splits[0].paths[0]);
  ASSERT_EQ(records.size(), 1u);
  const io::ImageRecord& r = records[0];
  EXPECT_EQ(r.format, "png");
  const io::Image img = io::decode_image(r.encoded);
  EXPECT_EQ(img.pixels, (std::vector<uint8_t>{255, 0, 0, 0, 0, 255}));
}

// What the class folders hold besides images is counted by kind, an empty
// class and classes that differ only in case are said.
TEST(ConvertDataset, ImageFolderSaysWhatItSkipsAndWhatLooksWrong) {
  const fs::path in = fresh_dir("folder_skipped");
  for (const char* c : {"Roses", "roses", "tulips"}) fs::create_directories(in / c);
  io::write_file_atomic((in / "Roses" / "a.png").string(), io::encode_png(gradient(4, 4, 3)));
  io::write_file_atomic((in / "roses" / "b.png").string(), io::encode_png(gradient(4, 4, 3)));
  io::write_file_atomic((in / "roses" / "notes.txt").string(), "not an image");
  fs::create_directories(in / "roses" / "more");
  ConvertOptions o;
  o.input_dir = in.string();
  o.output_dir = (in / "out").string();
  o.validation_fraction = 0;
  ::testing::internal::CaptureStderr();
  convert_image_folder(o);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("1 file(s) not named *.{jpg,jpeg,png"), std::string::npos) << said;
  EXPECT_NE(said.find("1 sub-folder(s)"), std::string::npos) << said;
  EXPECT_NE(said.find("'tulips' (label 2)"), std::string::npos) << said;
  EXPECT_NE(said.find("differ only in case"), std::string::npos) << said;
}

// --output_prefix ../../x would write outside --dataset_dir, and over
// files there without --overwrite. A prefix is a file name prefix.
TEST(ConvertDatasetTool, OutputPrefixWithASlashIsAUsageError) {
  ASSERT_TRUE(fs::exists(kTool)) << kTool << " is not built";
  const fs::path in = cifar_input("tool_prefix", true);
  const fs::path out = in / "deep" / "out";
  for (const std::string prefix : {"../../x", "sub/x", "/x", "x/"}) {
    auto [code, text] =
        convert("--quiet --dataset_name cifar10 --input '" + in.string() + "' --dataset_dir '" +
                    out.string() + "' --output_prefix '" + prefix + "'",
                in / "log.txt");
    EXPECT_EQ(code, 2) << prefix << ": " << text;
    EXPECT_NE(text.find("--output_prefix"), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_FALSE(fs::exists(in / "x_train.tfrecord")) << prefix;
    EXPECT_FALSE(fs::exists(out)) << prefix;
  }
}

}  // namespace
}  // namespace fastnn::datasets
