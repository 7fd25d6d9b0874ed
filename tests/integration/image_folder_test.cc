// LeNet trained on a generated folder of class sub-folders read directly
// (dataset image_folder) and on the same split written to TFRecords
// (dataset tfrecord): both learn the task, to the same accuracy within noise.
#include "datasets/image_folder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"
#include "tests/datasets/test_data.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace {
namespace fs = std::filesystem;

const std::string kBin = FASTNN_BIN_DIR;

// A noisy 28x28 RGB image whose bright region tells its class: top-left
// quadrant (0), top-right quadrant (1) or bottom half (2).
io::Image make_image(int cls, std::mt19937_64& rng) {
  io::Image img;
  img.height = img.width = 28;
  img.channels = 3;
  img.pixels.resize(28 * 28 * 3);
  const int bright = 150 + static_cast<int>(rng() % 100);
  for (int y = 0; y < 28; ++y) {
    for (int x = 0; x < 28; ++x) {
      const bool on = cls == 0 ? (y < 14 && x < 14) : cls == 1 ? (y < 14 && x >= 14) : y >= 14;
      for (int c = 0; c < 3; ++c) {
        const int v = (on ? bright : 20) + static_cast<int>(rng() % 60) - 30;
        img.pixels[(y * 28 + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return img;
}

nlohmann::json train(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {kBin + "/train_image_classifier",
                                   "--model_name=lenet",
                                   "--optimizer=momentum",
                                   "--learning_rate=0.002",
                                   "--momentum=0.9",
                                   "--learning_rate_decay_type=fixed",
                                   "--batch_size=16",
                                   "--stop_at_step=90",
                                   "--eval_every_n_iters=90",
                                   "--eval_batch_size=30",
                                   "--eval_split_name=validation",
                                   "--shuffle_buffer_size=300",
                                   "--num_preprocessing_threads=1",
                                   "--intra_op_parallelism_threads=1",
                                   "--log_loss_every_n_iters=30",
                                   "--use_fp16=False",
                                   "--enable_paisoar=False",
                                   "--seed=1",
                                   "--train_dir=" + dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv, dir.string() + ".log", 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json metrics;
  std::ifstream(dir / "metrics.json") >> metrics;
  return metrics;
}

TEST(ImageFolderIntegration, SameAccuracyAsTheSameDataInTfrecords) {
  const fs::path root = fresh_dir("image_folder_vs_tfrecord");
  const fs::path folder = root / "photos";
  std::mt19937_64 rng(7);
  const char* classes[] = {"bottom", "left", "right"};  // sorted: labels 0, 1, 2
  const int cls_of[] = {2, 0, 1};
  for (int k = 0; k < 3; ++k) {
    fs::create_directories(folder / classes[k]);
    for (int i = 0; i < 100; ++i) {
      io::write_file_atomic((folder / classes[k] / (std::to_string(i) + ".png")).string(),
                            io::encode_png(make_image(cls_of[k], rng)));
    }
  }
  // The same split as TFRecords (one file per split, the original PNG bytes).
  for (const char* split : {"train", "validation"}) {
    auto s = datasets::list_image_folder(folder.string(), split, 0.2, 0);
    std::vector<std::string> recs;
    for (size_t i = 0; i < s.files.size(); ++i) {
      recs.push_back(example_of(io::read_file(s.files[i]), s.labels[i]));
    }
    write_records(root / "records" / (std::string(split) + ".tfrecord"), recs);
  }

  auto from_folder = train(root / "train_folder",
                           {"--dataset_name=image_folder", "--dataset_dir=" + folder.string(),
                            "--validation_fraction=0.2"});
  auto from_records = train(
      root / "train_records",
      {"--dataset_name=tfrecord", "--dataset_dir=" + (root / "records").string(),
       "--train_files=train.tfrecord", "--eval_files=validation.tfrecord", "--num_classes=3"});
  ASSERT_TRUE(from_folder["eval_accuracy"].is_number()) << from_folder.dump();
  ASSERT_TRUE(from_records["eval_accuracy"].is_number()) << from_records.dump();
  const double a = from_folder["eval_accuracy"], b = from_records["eval_accuracy"];
  EXPECT_GE(a, 0.9);  // chance is 1/3
  EXPECT_GE(b, 0.9);
  EXPECT_LE(std::abs(a - b), 0.1) << a << " vs " << b;
}

// A fraction that leaves a split empty is printed as given (0.99999999,
// not 1.000000, which is not a valid fraction).
TEST(ImageFolderIntegration, AFractionInAMessageIsPrintedExactly) {
  const fs::path folder = fresh_dir("image_folder_fraction") / "photos";
  for (const char* c : {"a", "b"}) {
    fs::create_directories(folder / c);
    io::Image img;
    img.width = img.height = 4;
    img.channels = 1;
    img.pixels.assign(16, 7);
    io::write_file_atomic((folder / c / "0.png").string(), io::encode_png(img));
  }
  try {
    datasets::list_image_folder(folder.string(), "train", 0.99999999, 0);
    ADD_FAILURE() << "the train split of 2 images with 0.99999999 held out is not empty";
  } catch (const fastnn::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("validation_fraction 0.99999999)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fastnn::testing
