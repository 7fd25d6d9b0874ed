// export_tf_checkpoint as a user runs it: fine-tune TF-slim's person-detection
// network from TensorFlow's checkpoint, export the result as a TensorFlow V2
// checkpoint, and classify TFLite Micro's two test images from each; then the
// outputs it must refuse and the inputs it cannot read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/io/tf_checkpoint.h"
#include "tests/datasets/test_data.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {
namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::run;

std::string bin(const std::string& name) { return std::string(FASTNN_BIN_DIR) + "/" + name; }

fs::path shared_tf() {
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  return (env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared") /
         "testdata/tf_checkpoints";
}

// classify_image's JSON lines for TFLite Micro's person / no-person images.
std::vector<nlohmann::json> classify(const std::string& checkpoint, const fs::path& log) {
  const fs::path images = shared_tf() /
                          "tflite-micro/tensorflow/lite/micro/examples/"
                          "person_detection/testdata";
  const auto r = run({bin("classify_image"), "--model_name=mobilenet_v1_025", "--use_grayscale",
                      "--eval_image_size=96", "--checkpoint_path=" + checkpoint,
                      (images / "person.bmp").string(), (images / "no_person.bmp").string()},
                     log.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST(ExportTfCheckpoint, AFineTunedPersonDetectorClassifiesTheSameFromItsTensorflowExport) {
  const fs::path source = shared_tf() / "cs249-assignment2/ckpts/person_detection";
  if (!fs::exists(source)) GTEST_SKIP() << "skipped: no shared test data at " << shared_tf();
  const fs::path dir = fresh_dir("export_tf_checkpoint");
  const fs::path train_dir = dir / "train";
  const auto trained =
      run({bin("train_image_classifier"), "--dataset_name=mock", "--model_name=mobilenet_v1_025",
           "--use_grayscale=True", "--train_image_size=96", "--num_classes=2",
           "--checkpoint_path=" + source.string(), "--batch_size=2", "--stop_at_step=2",
           "--learning_rate=0.00001", "--optimizer=momentum", "--intra_op_parallelism_threads=1",
           "--num_preprocessing_threads=1", "--train_dir=" + train_dir.string()},
          (dir / "train.log").string());
  ASSERT_EQ(trained.exit_code, 0) << trained.output;

  const fs::path prefix = dir / "tf/model.ckpt-2";
  const auto exported = run({bin("export_tf_checkpoint"), "--checkpoint_path=" + train_dir.string(),
                             "--output_prefix=" + prefix.string()},
                            (dir / "export.log").string());
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("optimizer slots, global_step"), std::string::npos)
      << exported.output;
  EXPECT_NE(exported.output.find("left out (no TensorFlow counterpart): input/batches_consumed"),
            std::string::npos)
      << exported.output;
  const io::TfCheckpoint tf = io::TfCheckpoint::open((dir / "tf").string());  // via `checkpoint`
  EXPECT_EQ(tf.path(), prefix.string());
  ASSERT_NE(tf.find("MobilenetV1/Conv2d_0/weights"), nullptr);
  EXPECT_EQ(tf.find("MobilenetV1/Conv2d_0/weights")->shape, (std::vector<int64_t>{3, 3, 1, 8}));
  ASSERT_NE(tf.find("MobilenetV1/Conv2d_0/weights/Momentum"), nullptr);

  const auto ours = classify(train_dir.string(), dir / "ours.log");
  const auto theirs = classify((dir / "tf").string(), dir / "theirs.log");
  ASSERT_EQ(ours.size(), 2u);
  ASSERT_EQ(theirs.size(), 2u);
  EXPECT_EQ(ours[0]["class"], 1) << ours[0].dump();  // person
  EXPECT_EQ(ours[1]["class"], 0) << ours[1].dump();  // no person
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(theirs[i]["logits"], ours[i]["logits"]) << i;
}

TEST(ExportTfCheckpoint, RefusedOutputsAndUnreadableInputsWriteNothing) {
  const fs::path dir = fresh_dir("export_tf_checkpoint_bad");
  const std::string log = (dir / "out.log").string();
  const fs::path train_dir = dir / "train";
  const auto trained =
      run({bin("train_image_classifier"), "--dataset_name=mock", "--model_name=lenet",
           "--use_grayscale=True", "--train_image_size=28", "--num_classes=10", "--batch_size=2",
           "--stop_at_step=1", "--intra_op_parallelism_threads=1", "--num_preprocessing_threads=1",
           "--train_dir=" + train_dir.string()},
          (dir / "train.log").string());
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string from = "--checkpoint_path=" + train_dir.string();
  const fs::path prefix = dir / "tf/model.ckpt-1";
  const std::string to = "--output_prefix=" + prefix.string();
  auto r = run({bin("export_tf_checkpoint"), from, to}, log);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The same prefix again: exit 2 naming --overwrite; with it, replaced.
  r = run({bin("export_tf_checkpoint"), from, to}, log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  EXPECT_EQ(run({bin("export_tf_checkpoint"), from, to, "--overwrite"}, log).exit_code, 0);
  // Into the train_dir itself: its `checkpoint` file is the trainer's.
  r = run({bin("export_tf_checkpoint"), from,
           "--output_prefix=" + (train_dir / "model.ckpt-tf").string()},
          log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("train_dir"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(train_dir.string() + "/model.ckpt-tf.index"));
  // No such checkpoint, and a corrupt one: exit 3, nothing written.
  const std::string other = "--output_prefix=" + (dir / "other/model.ckpt-1").string();
  r = run({bin("export_tf_checkpoint"), "--checkpoint_path=" + (dir / "none").string(), other},
          log);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  std::ofstream(dir / "corrupt.ckpt", std::ios::binary) << "FNNCKPT1 and then nothing useful";
  r = run(
      {bin("export_tf_checkpoint"), "--checkpoint_path=" + (dir / "corrupt.ckpt").string(), other},
      log);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_FALSE(fs::exists(dir / "other"));
  // Missing arguments.
  EXPECT_EQ(run({bin("export_tf_checkpoint"), from}, log).exit_code, 2);
}

}  // namespace
}  // namespace fastnn
