// inspect_checkpoint as a user runs it: on TensorFlow's files (V1, V2), on
// this project's checkpoints, and against a network.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

// A checkpoint whose values cannot be read is not "compatible": the data
// file's ranges and CRCs are checked as a restore checks them (not
// "compatible", exit 0, then exit 3 at the restore).
TEST(InspectCheckpoint, UnreadableValuesAreListedNotCalledCompatible) {
  const fs::path src = serving("saved_model_half_plus_two_mkl/00000123/variables");
  const std::string data = "variables.data-00000-of-00001";
  for (const std::string how : {"flipped", "truncated", "missing"}) {
    const fs::path dir = fs::path(FASTNN_TEST_TMP) / ("inspect_unreadable_" + how);
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy(src, dir);
    if (how == "flipped") {
      std::fstream f(dir / data, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(0);
      f.put('\x7f');
    } else if (how == "truncated") {
      fs::resize_file(dir / data, 3);
    } else {
      fs::remove(dir / data);
    }
    const auto r = run({tool(), (dir / "variables").string()}, log_file("inspect_unreadable"));
    EXPECT_EQ(r.exit_code, 0) << how << r.output;
    EXPECT_NE(r.output.find("unreadable ("), std::string::npos) << how << r.output;
  }
}

// TF's --tensor_name, --all_tensors and --printoptions: the values, numpy's
// layout, a TF checkpoint's in TF's own layout.
TEST(InspectCheckpoint, PrintsValuesAsTensorflowsToolDoes) {
  const std::string v2 =
      serving("saved_model_half_plus_two_mkl/00000123/variables/variables.index").string();
  auto r = run({tool(), v2, "--tensor_name=conv2d/kernel"}, log_file("inspect_values"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tensor_name:  conv2d/kernel\n[[[[-0.52239597]]]]"), std::string::npos)
      << r.output;
  r = run({tool(), v2, "--all_tensors"}, log_file("inspect_values_all"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tensor_name:  conv2d_2/bias\n[0]"), std::string::npos) << r.output;
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "inspect_values";
  fs::remove_all(dir);
  fs::create_directories(dir);
  train::TensorMap m;
  m["model/x"] = torch::arange(10, torch::kFloat32).add(0.5);
  m["model/grid"] = torch::arange(12, torch::kInt64).view({3, 4});
  const std::string own = (dir / "model.ckpt-1").string();
  train::save_tensors(own, m);
  r = run({tool(), own, "--tensor_name=model/x", "--printoptions=threshold=4,edgeitems=2"},
          log_file("inspect_values_own"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[0.5 1.5 ... 8.5 9.5]"), std::string::npos) << r.output;
  r = run({tool(), own, "--tensor_name=model/grid"}, log_file("inspect_values_grid"));
  EXPECT_NE(r.output.find("[[0 1 2 3]\n [4 5 6 7]\n [8 9 10 11]]"), std::string::npos) << r.output;
  EXPECT_EQ(run({tool(), own, "--tensor_name=nope"}, log_file("inspect_values_bad")).exit_code, 2);
  EXPECT_EQ(run({tool(), own, "--printoptions=foo=1"}, log_file("inspect_values_bad")).exit_code,
            2);
}

// Names are shown, never obeyed: an ANSI escape, a newline that would forge
// a row, a byte of no character are escaped; a 100 kB name pads no other row.
TEST(InspectCheckpoint, NamesAreEscapedAndTheColumnIsCapped) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "inspect_names";
  fs::remove_all(dir);
  fs::create_directories(dir);
  train::TensorMap m;
  m["model/a\x1b[31mred"] = torch::zeros({1});
  m["model/b\nmodel/forged [9]"] = torch::zeros({1});
  m["model/c\xff\xc3\xa8"] = torch::zeros({1});
  m["model/" + std::string(100000, 'x')] = torch::zeros({1});
  m["model/e"] = torch::zeros({2});
  const std::string file = (dir / "model.ckpt-1").string();
  train::save_tensors(file, m);
  const auto r = run({tool(), file}, log_file("inspect_names"));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos);
  EXPECT_NE(r.output.find("model/a\\x1b[31mred"), std::string::npos);
  EXPECT_NE(r.output.find("model/b\\x0amodel/forged [9]"), std::string::npos);
  EXPECT_NE(r.output.find("model/c\\xff\xc3\xa8 "), std::string::npos);  // è kept whole
  std::istringstream lines(r.output);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("model/", 0) != 0) continue;
    ++rows;
    if (line.rfind("model/e ", 0) == 0) EXPECT_LT(line.size(), 200u) << line;
  }
  EXPECT_EQ(rows, 5);  // one a tensor, none forged
}

TEST(InspectCheckpoint, BadArgumentsAndMissingFilesHaveTheirExitCodes) {
  auto noarg = run({tool()}, log_file("inspect_noarg"));
  EXPECT_EQ(noarg.exit_code, 2);
  EXPECT_NE(noarg.output.find("inspect_checkpoint: error: no checkpoint given (usage: "),
            std::string::npos)
      << noarg.output;
  // Neither format: said so (not "not a FastNN-C++ checkpoint" alone).
  const fs::path png = fs::path(FASTNN_TEST_TMP) / "inspect_not_a_checkpoint.png";
  std::ofstream(png, std::ios::binary) << "\x89PNG\r\n\x1a\n0000000000000000";
  auto other = run({tool(), png.string()}, log_file("inspect_png"));
  EXPECT_EQ(other.exit_code, 3) << other.output;
  EXPECT_NE(other.output.find("neither a FastNN-C++ checkpoint"), std::string::npos)
      << other.output;
  EXPECT_EQ(run({tool(), "no/such/ckpt"}, log_file("inspect_missing")).exit_code, 3);
  auto r = run(
      {tool(), serving("bad_half_plus_two/00000123/export").string(), "--model_name=no_such_net"},
      log_file("inspect_badnet"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// A device or a FIFO named as the checkpoint: exit 3 naming it, at once
// (no std::bad_alloc from reading /dev/zero whole, no endless wait of a
// FIFO for a writer).
TEST(InspectCheckpoint, DevicesAndFifosAreRefusedByName) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "inspect_nodes";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", dir / "zero");
  for (const fs::path& p : {fs::path("/dev/zero"), dir / "zero", dir / "fifo"}) {
    const auto r = run({tool(), p.string()}, log_file("inspect_node"), 60);
    EXPECT_EQ(r.exit_code, 3) << p << r.output;
    EXPECT_NE(r.output.find(p.string()), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace fastnn
