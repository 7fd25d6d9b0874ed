// inspect_checkpoint as a user runs it: on TensorFlow's files (V1, V2), on
// this project's checkpoints, and against a network.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>

#include "src/train/checkpoint.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {
namespace fs = std::filesystem;
using testing::run;

std::string tool() { return std::string(FASTNN_BIN_DIR) + "/inspect_checkpoint"; }
std::string log_file(const std::string& name) {
  fs::create_directories(FASTNN_TEST_TMP);
  return (fs::path(FASTNN_TEST_TMP) / (name + ".log")).string();
}
fs::path serving(const std::string& rel) {
  return fs::path(FASTNN_SOURCE_DIR) / "tests/data/tf_checkpoints/tensorflow_serving" / rel;
}

TEST(InspectCheckpoint, ListsTensorflowV1AndV2Files) {
  auto r =
      run({tool(), serving("saved_model_half_plus_two_mkl/00000123/variables/variables.index")},
          log_file("inspect_v2"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("TensorFlow V2 checkpoint"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("9 tensors, 36 bytes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("conv2d/kernel"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[1,1,1,1]"), std::string::npos) << r.output;
  r = run({tool(), serving("bad_half_plus_two/00000123/export").string()}, log_file("inspect_v1"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("TensorFlow V1 checkpoint"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Variable_1"), std::string::npos) << r.output;
}

TEST(InspectCheckpoint, ComparesOwnCheckpointWithANetwork) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "inspect_own";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A lenet checkpoint in this project's format, one variable reshaped,
  // one dropped, one added.
  train::TensorMap m;
  m["model/LeNet/conv1/weights"] = torch::zeros({32, 1, 5, 5});
  m["model/LeNet/conv1/biases"] = torch::zeros({32});
  m["model/LeNet/fc4/weights"] = torch::zeros({7, 1024});
  m["model/LeNet/extra"] = torch::zeros({3});
  m["global_step"] = torch::zeros({}, torch::kInt64);
  const std::string file = (dir / "model.ckpt-5").string();
  train::save_tensors(file, m);
  auto r = run({tool(), file, "--model_name=lenet", "--num_classes=10", "--use_grayscale"},
               log_file("inspect_own"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("FastNN-C++ checkpoint"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LeNet/fc4/weights: network [10,1024], checkpoint [7,1024]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("LeNet/extra [3]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("LeNet/conv2/weights"), std::string::npos) << r.output;  // missing
  EXPECT_NE(r.output.find("checkpoint_exclude_scopes=LeNet/fc4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("differences: "), std::string::npos) << r.output;
}

TEST(InspectCheckpoint, TfSlimCheckpointMatchesThePortsNetwork) {
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  const fs::path dir = (env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared") /
                       "testdata/tf_checkpoints/cs249-assignment2/ckpts/person_detection";
  if (!fs::exists(dir)) GTEST_SKIP() << "skipped: no shared test data at " << dir;
  auto r = run(
      {tool(), dir.string(), "--model_name=mobilenet_v1_025", "--num_classes=2", "--use_grayscale"},
      log_file("inspect_tf_slim"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("441 tensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compatible: every variable"), std::string::npos) << r.output;
  // As a 1001-class RGB ImageNet network it differs in its first layer and
  // its logits, and the tool says which scopes to exclude.
  r = run({tool(), dir.string(), "--model_name=mobilenet_v1_025", "--num_classes=1001"},
          log_file("inspect_tf_slim_rgb"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoint_exclude_scopes=MobilenetV1/Conv2d_0,MobilenetV1/Logits"),
            std::string::npos)
      << r.output;
}

TEST(InspectCheckpoint, BadArgumentsAndMissingFilesHaveTheirExitCodes) {
  EXPECT_EQ(run({tool()}, log_file("inspect_noarg")).exit_code, 2);
  EXPECT_EQ(run({tool(), "no/such/ckpt"}, log_file("inspect_missing")).exit_code, 3);
  auto r = run(
      {tool(), serving("bad_half_plus_two/00000123/export").string(), "--model_name=no_such_net"},
      log_file("inspect_badnet"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace fastnn
