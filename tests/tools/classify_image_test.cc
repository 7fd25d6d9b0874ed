// classify_image as a user runs it: TensorFlow's TF-slim person-detection
// network on the images its authors tested it with, a labels file, an
// unreadable image among readable ones, and bad arguments.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "datasets/dataset_factory.h"
#include "models/model_factory.h"
#include "src/io/image.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {
namespace fs = std::filesystem;
using testing::run;

std::string tool() { return std::string(FASTNN_BIN_DIR) + "/classify_image"; }

fs::path shared_tf() {
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  return (env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared") /
         "testdata/tf_checkpoints";
}

// TFLite Micro's 96x96 8-bit grayscale BMP (identity palette, rows
// bottom-up, pixels from byte 1078) as a PNG.
void bmp_to_png(const fs::path& bmp, const fs::path& png) {
  std::ifstream in(bmp, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(bytes.size(), 1078u + 96 * 96);
  io::Image img;
  img.width = 96;
  img.height = 96;
  img.channels = 1;
  img.pixels.resize(96 * 96);
  for (int r = 0; r < 96; ++r) {
    for (int c = 0; c < 96; ++c) {
      img.pixels[(95 - r) * 96 + c] = static_cast<uint8_t>(bytes[1078 + r * 96 + c]);
    }
  }
  std::ofstream(png, std::ios::binary) << io::encode_png(img);
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '{') lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST(ClassifyImage, TfSlimPersonDetectionFromTensorflowTellsPersonFromNoPerson) {
  const fs::path ckpt = shared_tf() / "cs249-assignment2/ckpts/person_detection";
  if (!fs::exists(ckpt)) GTEST_SKIP() << "skipped: no shared test data at " << shared_tf();
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "classify_image";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path images = shared_tf() /
                          "tflite-micro/tensorflow/lite/micro/examples/"
                          "person_detection/testdata";
  bmp_to_png(images / "person.bmp", dir / "person.png");
  bmp_to_png(images / "no_person.bmp", dir / "no_person.png");
  std::ofstream(dir / "not_an_image.png") << "not an image";
  std::ofstream(dir / "labels.txt") << "0:notperson\n1:person\n";
  // num_classes comes from the checkpoint.
  const auto r =
      run({tool(), "--model_name=mobilenet_v1_025", "--use_grayscale", "--eval_image_size=96",
           "--checkpoint_path=" + ckpt.string(), "--labels_file=" + (dir / "labels.txt").string(),
           "--top_k=2", (dir / "person.png").string(), (dir / "not_an_image.png").string(),
           (dir / "no_person.png").string()},
          (dir / "out.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;  // one image could not be read
  EXPECT_NE(r.output.find("not_an_image.png"), std::string::npos) << r.output;
  const auto lines = json_lines(r.output);
  ASSERT_EQ(lines.size(), 2u) << r.output;
  EXPECT_EQ(lines[0]["file"], (dir / "person.png").string());
  EXPECT_EQ(lines[0]["class"], 1) << lines[0].dump();
  EXPECT_EQ(lines[0]["label"], "person");
  EXPECT_EQ(lines[1]["class"], 0) << lines[1].dump();
  EXPECT_EQ(lines[1]["label"], "notperson");
  // TFLite Micro's BMPs as they are (TF's decode_image reads BMP): the same
  // classes and logits as their PNG conversions.
  const auto bmp = run({tool(), "--model_name=mobilenet_v1_025", "--use_grayscale",
                        "--eval_image_size=96", "--checkpoint_path=" + ckpt.string(),
                        (images / "person.bmp").string(), (images / "no_person.bmp").string()},
                       (dir / "bmp.log").string());
  EXPECT_EQ(bmp.exit_code, 0) << bmp.output;
  const auto bmp_lines = json_lines(bmp.output);
  ASSERT_EQ(bmp_lines.size(), 2u) << bmp.output;
  EXPECT_EQ(bmp_lines[0]["class"], 1);
  EXPECT_EQ(bmp_lines[1]["class"], 0);
  EXPECT_EQ(bmp_lines[0]["logits"], lines[0]["logits"]);
  for (const auto& l : lines) {
    EXPECT_EQ(l["logits"].size(), 2u);
    EXPECT_EQ(l["top_k"].size(), 2u);
    EXPECT_GT(l["probability"].get<double>(), 0.5);
  }
}

// A 1-channel lenet of `classes` classes as initialized, saved in this
// project's format as dir/model.ckpt-1.
void save_grayscale_lenet(const fs::path& dir, int64_t classes) {
  models::ModelOptions o;
  o.num_classes = classes;
  o.in_channels = 1;
  auto model = models::find_model("lenet").create(o);
  train::TensorMap m;
  for (const auto& v : models::model_variables(*model)) m[train::model_key(v.name)] = v.tensor;
  train::save_tensors((dir / "model.ckpt-1").string(), m);
}

TEST(ClassifyImage, A1001ClassNetworkGetsImagenetNames) {
  const auto names = datasets::imagenet_class_names();
  ASSERT_EQ(names.size(), 1001u);
  EXPECT_EQ(names[0], "background");
  EXPECT_EQ(names[1], "tench");  // n01440764, the first synset
  EXPECT_EQ(names[1000], "toilet tissue");
  // A lenet with 1001 classes, as initialized, saved in this project's
  // format; any image gets a class and that class's ImageNet name.
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "classify_image_imagenet";
  fs::remove_all(dir);
  fs::create_directories(dir);
  save_grayscale_lenet(dir, 1001);
  io::Image img;
  img.width = img.height = 28;
  img.channels = 1;
  img.pixels.assign(28 * 28, 128);
  std::ofstream(dir / "gray.png", std::ios::binary) << io::encode_png(img);
  const auto r = run({tool(), "--model_name=lenet", "--use_grayscale",
                      "--checkpoint_path=" + dir.string(), (dir / "gray.png").string()},
                     (dir / "out.log").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto lines = json_lines(r.output);
  ASSERT_EQ(lines.size(), 1u) << r.output;
  const int64_t c = lines[0]["class"].get<int64_t>();
  ASSERT_TRUE(c >= 0 && c < 1001) << c;
  EXPECT_EQ(lines[0]["label"], names[static_cast<size_t>(c)]);
  EXPECT_EQ(lines[0]["logits"].size(), 1001u);
  EXPECT_EQ(lines[0]["top_k"].size(), 5u);
}

// Images, image lists and label files that are devices or FIFOs: exit 3
// naming the file, in bounded time and memory (no endless read of a link
// to /dev/zero, no endless wait on a FIFO).
TEST(ClassifyImage, DevicesFifosAndBadSizesAreNamedWithinBounds) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "classify_image_nodes";
  fs::remove_all(dir);
  fs::create_directories(dir);
  save_grayscale_lenet(dir, 10);
  fs::create_symlink("/dev/zero", dir / "zero.png");
  ASSERT_EQ(::mkfifo((dir / "fifo.png").c_str(), 0600), 0);
  const std::vector<std::string> base = {tool(), "--model_name=lenet", "--use_grayscale",
                                         "--checkpoint_path=" + dir.string()};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, (dir / "out.log").string(), 120);
  };
  for (const std::string& arg :
       {(dir / "zero.png").string(), "--image_list=" + (dir / "zero.png").string()}) {
    const auto r = with({arg});
    EXPECT_EQ(r.exit_code, 3) << arg << r.output;
    EXPECT_NE(r.output.find((dir / "zero.png").string()), std::string::npos) << r.output;
  }
  auto r = with({"--labels_file=" + (dir / "fifo.png").string(), "x.png"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("fifo.png"), std::string::npos) << r.output;
  // A labels_file short of names, with a line that is not "id:name": said,
  // and counted.
  io::Image img;
  img.width = img.height = 28;
  img.channels = 1;
  img.pixels.assign(28 * 28, 128);
  std::ofstream(dir / "gray.png", std::ios::binary) << io::encode_png(img);
  std::ofstream(dir / "labels.txt") << "0:zero\n1:one\nno id here\n2:two\n";
  r = with({"--labels_file=" + (dir / "labels.txt").string(), (dir / "gray.png").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 names for the network's 10 classes, 1 line(s) not of the form "
                          "id:name skipped"),
            std::string::npos)
      << r.output;
  // A size the network cannot take: exit 2 naming the key (not exit 1,
  // LibTorch's "mat1 and mat2 shapes cannot be multiplied").
  r = with({"--eval_image_size=32", "x.png"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("eval_image_size: 32: lenet takes 28x28 images only"), std::string::npos)
      << r.output;
}

TEST(ClassifyImage, BadArgumentsAreUsageErrors) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "classify_image_bad";
  fs::create_directories(dir);
  const std::string v1 = (fs::path(FASTNN_SOURCE_DIR) /
                          "tests/data/tf_checkpoints/tensorflow_serving/bad_half_plus_two/"
                          "00000123/export")
                             .string();
  // No image.
  EXPECT_EQ(run({tool(), "--model_name=lenet", "--checkpoint_path=" + v1}, (dir / "a.log").string())
                .exit_code,
            2);
  // No checkpoint_path.
  EXPECT_EQ(run({tool(), "--model_name=lenet", "x.png"}, (dir / "b.log").string()).exit_code, 2);
  // No model_name: said so (not blamed on inception_resnet_v2's logits).
  const auto unnamed = run({tool(), "--checkpoint_path=" + v1, "x.png"}, (dir / "d.log").string());
  EXPECT_EQ(unnamed.exit_code, 2) << unnamed.output;
  EXPECT_NE(unnamed.output.find("model_name: not set"), std::string::npos) << unnamed.output;
  // A checkpoint without lenet's variables, num_classes given: named, exit 2.
  const auto r =
      run({tool(), "--model_name=lenet", "--num_classes=10", "--checkpoint_path=" + v1, "x.png"},
          (dir / "c.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("LeNet/conv1/weights"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fastnn
