// The committed dataset configs (configs/{cifar10,flowers,imagenet}.cfg) on
// tiny generated data in each dataset's layout: each resolves with --dry_run
// and trains two steps with the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/datasets/test_data.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace {
namespace fs = std::filesystem;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kSource = FASTNN_SOURCE_DIR;

// n RGB records of size h x w with labels drawn from [lo, hi].
std::vector<std::string> records(int n, int h, int w, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    const int64_t label = lo + static_cast<int64_t>(rng() % (hi - lo + 1));
    out.push_back(example_of(png_of(h, w, 3, static_cast<uint8_t>(rng())), label));
  }
  return out;
}

struct Layout {
  const char* config;
  // (file name, records) of every file to generate
  std::vector<std::pair<std::string, std::vector<std::string>>> files;
};

Layout layout(const std::string& name) {
  if (name == "cifar10") {
    return {"configs/cifar10.cfg",
            {{"cifar10_train.tfrecord", records(8, 32, 32, 0, 9, 1)},
             {"cifar10_test.tfrecord", records(4, 32, 32, 0, 9, 2)}}};
  }
  if (name == "flowers") {
    // The fine-tuning source is made by the test (pretrained_inception_v3).
    Layout l{"configs/flowers.cfg", {}};
    for (int i = 0; i < 5; ++i) {
      l.files.push_back({"flowers_train_0000" + std::to_string(i) + "-of-00005.tfrecord",
                         records(2, 40, 56, 0, 4, 10 + i)});
    }
    l.files.push_back({"flowers_validation_00000-of-00005.tfrecord", records(2, 40, 56, 0, 4, 3)});
    return l;
  }
  Layout l{"configs/imagenet.cfg", {}};
  l.files.push_back({"train-00000-of-01024", records(4, 40, 56, 1, 1000, 4)});
  l.files.push_back({"train-00001-of-01024", records(4, 40, 56, 1, 1000, 5)});
  l.files.push_back({"validation-00000-of-00128", records(2, 40, 56, 1, 1000, 6)});
  return l;
}

// A one-step 1001-class Inception V3 checkpoint (ImageNet-shaped logits) in
// root/pretrained, as the source flowers.cfg fine-tunes from.
std::string pretrained_inception_v3(const fs::path& root) {
  const fs::path dir = root / "pretrained";
  auto r = run({kBin + "/train_image_classifier", "--model_name=inception_v3",
                "--dataset_name=mock", "--num_classes=1001", "--batch_size=1", "--stop_at_step=1",
                "--use_fp16=False", "--enable_paisoar=False", "--train_dir=" + dir.string()},
               (root / "pretrain.log").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir.string();
}

class DatasetConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(DatasetConfig, DryRunAndTwoSteps) {
  const std::string name = GetParam();
  const Layout l = layout(name);
  const fs::path root = fresh_dir("config_" + name);
  const fs::path data = root / "data";
  for (const auto& [file, recs] : l.files) write_records(data / file, recs);
  std::vector<std::string> base = {kBin + "/train_image_classifier", "--config",
                                   (kSource / l.config).string(), "--dataset_dir=" + data.string()};
  if (name == "flowers") base.push_back("--checkpoint_path=" + pretrained_inception_v3(root));

  auto dry = base;
  dry.push_back("--dry_run");
  auto r = run(dry, (root / "dry.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# dataset: " + name + " split train"), std::string::npos) << r.output;

  auto train = base;
  for (const char* a : {"--stop_at_step=2", "--batch_size=2", "--shuffle_buffer_size=8",
                        "--num_preprocessing_threads=1", "--intra_op_parallelism_threads=2",
                        "--log_loss_every_n_iters=1"}) {
    train.push_back(a);
  }
  train.push_back("--train_dir=" + (root / "train").string());
  r = run(train, (root / "train.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(data "), std::string::npos) << r.output;
  nlohmann::json metrics;
  std::ifstream(root / "train" / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["final_step"], 2);
  EXPECT_EQ(metrics["records_skipped"], 0);
  EXPECT_EQ(metrics["records_skipped_by_kind"]["bad_label"], 0);
  if (name == "flowers") {
    // Everything but the excluded 1001-class logits came from the checkpoint.
    EXPECT_NE(r.output.find("(excluded: InceptionV3/Logits,InceptionV3/AuxLogits)"),
              std::string::npos)
        << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, DatasetConfig,
                         ::testing::Values("cifar10", "flowers", "imagenet"),
                         [](const auto& info) { return info.param; });

TEST(DatasetConfig, BadRecordsExit3OrAreCountedInMetrics) {
  const fs::path root = fresh_dir("config_bad_records");
  auto recs = records(6, 32, 32, 0, 9, 9);
  recs[2] = example_of(png_of(32, 32, 3, 1), 10);      // label outside [0, 10)
  recs[4] = example_of("\xff\xd8\xff not a jpeg", 3);  // undecodable image
  write_records(root / "data" / "cifar10_train.tfrecord", recs);
  std::vector<std::string> args = {kBin + "/train_image_classifier",
                                   "--config",
                                   (kSource / "configs/cifar10.cfg").string(),
                                   "--dataset_dir=" + (root / "data").string(),
                                   "--batch_size=2",
                                   "--num_epochs=1",
                                   "--shuffle_buffer_size=1",
                                   "--num_preprocessing_threads=1",
                                   "--train_dir=" + (root / "train").string()};
  auto r = run(args, (root / "fail.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("cifar10_train.tfrecord: record 2 at offset"), std::string::npos)
      << r.output;

  fs::remove_all(root / "train");
  args.push_back("--skip_corrupt_records=True");
  // 2 of 6 records rejected: over the default max_skipped_share (0.1), which
  // counts rejected records of every kind.
  args.push_back("--max_skipped_share=0.5");
  r = run(args, (root / "skip.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 corrupt records skipped: 1 bad_image, 1 bad_label"), std::string::npos)
      << r.output;
  nlohmann::json metrics;
  std::ifstream(root / "train" / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["records_skipped"], 2);
  EXPECT_EQ(metrics["records_skipped_by_kind"]["bad_label"], 1);
  EXPECT_EQ(metrics["records_skipped_by_kind"]["bad_image"], 1);
  EXPECT_EQ(metrics["records_skipped_by_kind"]["crc_mismatch"], 0);
  EXPECT_EQ(metrics["final_step"], 3);
}

TEST(DatasetConfig, MissingFilesExitWithCode3NamingThePattern) {
  const fs::path root = fresh_dir("config_missing");
  auto r = run(
      {kBin + "/train_image_classifier", "--config", (kSource / "configs/imagenet.cfg").string(),
       "--dataset_dir=" + root.string(), "--dry_run"},
      (root / "log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("train-[0-9]"), std::string::npos) << r.output;
}

// Every record rejected under the skip policy is exit 3, not 0 steps and
// exit 0; a prefetch_buffer_size of 1e9, which would grow until the process
// dies, is exit 2; a symbolic link loop in an image folder is exit 3.
TEST(DatasetConfig, NothingToTrainOnExits3AndUnboundedSettingsExit2) {
  const fs::path root = fresh_dir("config_nothing_to_train");
  auto recs = records(6, 32, 32, 10, 12, 9);  // every label outside [0, 10)
  write_records(root / "data" / "cifar10_train.tfrecord", recs);
  const std::vector<std::string> base = {kBin + "/train_image_classifier",
                                         "--config",
                                         (kSource / "configs/cifar10.cfg").string(),
                                         "--dataset_dir=" + (root / "data").string(),
                                         "--batch_size=2",
                                         "--num_epochs=1",
                                         "--num_preprocessing_threads=1"};
  auto args = base;
  args.insert(args.end(), {"--skip_corrupt_records=True", "--max_skipped_share=1",
                           "--train_dir=" + (root / "train").string()});
  auto r = run(args, (root / "skip.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("none of the 6 records"), std::string::npos) << r.output;
  nlohmann::json metrics;
  std::ifstream(root / "train" / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["exit_status"], 3) << metrics.dump();

  // Half the records rejected, in a run that stops at a step long before
  // the 10,000 records of the check during the input: exit 3 at its end.
  auto half = records(8, 32, 32, 0, 9, 9);
  for (int i = 0; i < 8; i += 2) half[i] = example_of(png_of(32, 32, 3, 1), 10);
  write_records(root / "half" / "cifar10_train.tfrecord", half);
  args = base;
  args.insert(args.end(), {"--dataset_dir=" + (root / "half").string(),
                           "--skip_corrupt_records=True", "--num_epochs=1000", "--stop_at_step=2",
                           "--train_dir=" + (root / "train_half").string()});
  r = run(args, (root / "half.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("more than max_skipped_share = 0.1"), std::string::npos) << r.output;

  // A labels_offset that leaves no class: exit 2 naming it, before any work
  // (not exit 1 from a negative-size logits layer).
  args = base;
  args.insert(args.end(), {"--labels_offset=100", "--dry_run"});
  r = run(args, (root / "offset.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("labels_offset: 100"), std::string::npos) << r.output;

  for (const char* flag :
       {"--prefetch_buffer_size=1000000000", "--num_parallel_batches=1000000000"}) {
    args = base;
    args.insert(args.end(), {flag, "--dry_run"});
    r = run(args, (root / "prefetch.log").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    const std::string key = std::string(flag).substr(2, std::string(flag).find('=') - 2);
    EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("1000000000"), std::string::npos) << r.output;
  }

  const fs::path folder = root / "folder";
  fs::create_directories(folder / "a");
  fs::create_directories(folder / "b");
  for (const char* c : {"a", "b"}) {
    std::ofstream(folder / c / "0.png", std::ios::binary) << png_of(8, 8, 3, 1);
  }
  fs::create_symlink(folder / "b" / "x.png", folder / "b" / "x.png");
  r = run({kBin + "/train_image_classifier", "--model_name=lenet", "--dataset_name=image_folder",
           "--dataset_dir=" + folder.string(), "--batch_size=1", "--dry_run"},
          (root / "loop.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find((folder / "b" / "x.png").string()), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fastnn::testing
