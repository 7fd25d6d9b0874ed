// export_inference_graph as a user runs it: small networks exported from
// this project's checkpoints, the files read back with ONNX's protobufs and
// checked with onnx::checker; bad arguments and bad checkpoints write
// nothing. An op without an ONNX mapping is refused by name. (The numbers
// themselves are checked by ONNX Runtime: scripts/onnx_oracle.sh.)
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <torch/torch.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "src/export/onnx_export.h"
#include "src/io/atomic_file.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"
#include "tests/integration/process.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {
namespace fs = std::filesystem;
using testing::run;

std::string tool() { return std::string(FASTNN_BIN_DIR) + "/export_inference_graph"; }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// NAME as initialized with `classes` classes, saved in this project's format.
std::string save_network(const fs::path& dir, const std::string& name, int64_t classes,
                         int64_t channels = 3) {
  models::ModelOptions o;
  o.num_classes = classes;
  o.in_channels = channels;
  auto model = models::find_model(name).create(o);
  train::TensorMap m;
  for (const auto& v : models::model_variables(*model)) m[train::model_key(v.name)] = v.tensor;
  const std::string path = (dir / "model.ckpt-1").string();
  train::save_tensors(path, m);
  return path;
}

onnx::ModelProto read_model(const fs::path& path) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(io::read_file(path.string()))) << path;
  return m;
}

// "N" for a named dimension, else its size.
std::vector<std::string> dims(const onnx::ValueInfoProto& v) {
  std::vector<std::string> r;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    r.push_back(d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  }
  return r;
}

std::string metadata(const onnx::ModelProto& m, const std::string& key) {
  for (const auto& p : m.metadata_props()) {
    if (p.key() == key) return p.value();
  }
  return "";
}

TEST(ExportInferenceGraph, LenetWithADynamicBatchPassesTheCheckerWithItsNamesAndShapes) {
  const fs::path dir = fresh_dir("export_lenet");
  const std::string ckpt = save_network(dir, "lenet", 10);
  const fs::path out = dir / "lenet.onnx";
  const auto r = run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt,
                      "--output_file=" + out.string(), "--labels_offset=1"},
                     (dir / "out.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const onnx::ModelProto m = read_model(out);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), exporter::kOnnxOpset);
  ASSERT_EQ(m.graph().input_size(), 1);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "images");
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"N", "3", "28", "28"}));
  EXPECT_EQ(m.graph().output(0).name(), "logits");
  EXPECT_EQ(dims(m.graph().output(0)), (std::vector<std::string>{"N", "10"}));
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  // Weights are initializers under their TF-slim names.
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  EXPECT_TRUE(inits.count("LeNet/conv1/weights")) << "initializers: " << inits.size();
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  EXPECT_TRUE(ops.count("Conv") && ops.count("MaxPool") && ops.count("Gemm"));
  EXPECT_EQ(metadata(m, "model_name"), "lenet");
  EXPECT_EQ(metadata(m, "num_classes"), "10");
  EXPECT_EQ(metadata(m, "labels_offset"), "1");
  EXPECT_EQ(metadata(m, "preprocessing"), "lenet");
}

TEST(ExportInferenceGraph, AFixedBatchAndAnotherImageSize) {
  const fs::path dir = fresh_dir("export_cifarnet");
  const std::string ckpt = save_network(dir, "cifarnet", 7);
  const fs::path out = dir / "cifarnet.onnx";
  const auto r = run({tool(), "--model_name=cifarnet", "--checkpoint_path=" + ckpt,
                      "--output_file=" + out.string(), "--batch_size", "4"},
                     (dir / "out.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const onnx::ModelProto m = read_model(out);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"4", "3", "32", "32"}));
  EXPECT_EQ(dims(m.graph().output(0)), (std::vector<std::string>{"4", "7"}));
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  // CifarNet's local response normalization, as LibTorch computes it.
  EXPECT_TRUE(ops.count("Pow") && ops.count("AveragePool") && ops.count("Reshape"));

  // A network that takes any size, at 64 instead of its 224.
  const std::string mobilenet = save_network(dir, "mobilenet_v1_025", 5);
  const auto r2 = run({tool(), "--model_name=mobilenet_v1_025", "--checkpoint_path=" + mobilenet,
                       "--output_file=" + out.string(), "--image_size=64"},
                      (dir / "out.log").string());
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  const onnx::ModelProto m2 = read_model(out);
  EXPECT_EQ(dims(m2.graph().input(0)), (std::vector<std::string>{"N", "3", "64", "64"}));
  EXPECT_EQ(dims(m2.graph().output(0)), (std::vector<std::string>{"N", "5"}));
  EXPECT_EQ(metadata(m2, "image_size"), "64");
}

TEST(ExportInferenceGraph, AOneChannelCheckpointGivesAOneChannelInput) {
  // As train_image_classifier writes it for MNIST: no --use_grayscale needed.
  const fs::path dir = fresh_dir("export_gray");
  const std::string ckpt = save_network(dir, "lenet", 10, 1);
  const fs::path out = dir / "lenet.onnx";
  const auto r = run(
      {tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt, "--output_file=" + out.string()},
      (dir / "out.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dims(read_model(out).graph().input(0)),
            (std::vector<std::string>{"N", "1", "28", "28"}));
}

TEST(ExportInferenceGraph, TensorflowsPersonDetectionCheckpointExportsWithItsMovingAverages) {
  // TF-slim's mobilenet_v1_025 trained by TensorFlow (V2 checkpoint with
  // ExponentialMovingAverage shadows; the team's shared test data).
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  const fs::path ckpt = (env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared") /
                        "testdata/tf_checkpoints/cs249-assignment2/ckpts/person_detection";
  if (!fs::exists(ckpt)) GTEST_SKIP() << "skipped: no shared test data at " << ckpt;
  const fs::path dir = fresh_dir("export_tf");
  const fs::path out = dir / "person.onnx";
  const auto r = run({tool(), "--model_name=mobilenet_v1_025", "--use_grayscale", "--image_size=96",
                      "--checkpoint_path=" + ckpt.string(), "--output_file=" + out.string()},
                     (dir / "out.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const onnx::ModelProto m = read_model(out);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"N", "1", "96", "96"}));
  EXPECT_EQ(dims(m.graph().output(0)), (std::vector<std::string>{"N", "2"}));
  EXPECT_EQ(metadata(m, "moving_averages"), "true");
  EXPECT_EQ(metadata(m, "preprocessing"), "inception");
}

TEST(ExportInferenceGraph, BadArgumentsAndBadCheckpointsWriteNothing) {
  const fs::path dir = fresh_dir("export_bad");
  const std::string ckpt = save_network(dir, "lenet", 10);
  const fs::path out = dir / "out.onnx";
  const std::string log = (dir / "out.log").string();
  const std::string to = "--output_file=" + out.string();
  // Unknown network.
  auto r = run({tool(), "--model_name=no_such_net", "--checkpoint_path=" + ckpt, to}, log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no_such_net"), std::string::npos) << r.output;
  // No output file, a bad batch size, a bad image size.
  EXPECT_EQ(run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt}, log).exit_code, 2);
  r = run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt, to, "--batch_size=0"}, log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("batch_size"), std::string::npos) << r.output;
  EXPECT_EQ(
      run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt, to, "--image_size=x"}, log)
          .exit_code,
      2);
  // The checkpoint of another network: its variables are named.
  r = run({tool(), "--model_name=cifarnet", "--num_classes=10", "--checkpoint_path=" + ckpt, to},
          log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // No checkpoint and no num_classes; a corrupt one (one byte flipped: CRC).
  r = run({tool(), "--model_name=lenet", to}, log);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("num_classes: not set"), std::string::npos) << r.output;
  r = run({tool(), "--model_name=lenet", "--checkpoint_path=" + (dir / "none").string(), to}, log);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  std::string bytes = io::read_file(ckpt);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream((dir / "model.ckpt-2").string(), std::ios::binary) << bytes;
  r = run(
      {tool(), "--model_name=lenet", "--checkpoint_path=" + (dir / "model.ckpt-2").string(), to},
      log);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find("out.onnx"), std::string::npos) << e.path();
  }
}

// A huge fixed batch is the declared size only: traced small (tracing a
// batch of a million would allocate ~100 GB). An image size the network
// cannot take is a usage error naming the key (not exit 1, "mat1 and
// mat2 shapes cannot be multiplied").
TEST(ExportInferenceGraph, AHugeBatchIsDeclaredNotTracedAndABadImageSizeIsExit2) {
  const fs::path dir = fresh_dir("export_sizes");
  const std::string ckpt = save_network(dir, "lenet", 10, 1);
  const fs::path out = dir / "lenet.onnx";
  auto r = run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt,
                "--output_file=" + out.string(), "--batch_size=1000000"},
               (dir / "out.log").string(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const onnx::ModelProto m = read_model(out);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"1000000", "1", "28", "28"}));
  EXPECT_EQ(dims(m.graph().output(0)), (std::vector<std::string>{"1000000", "10"}));
  r = run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt,
           "--output_file=" + (dir / "x.onnx").string(), "--image_size=32"},
          (dir / "out.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("image_size: 32: lenet takes 28x28 images only"), std::string::npos)
      << r.output;
  // A network that takes many sizes but not this one: alexnet_v2's
  // fully-connected layers are convolutions over a map that is gone at 32.
  const std::string alexnet = save_network(dir, "alexnet_v2", 10);
  r = run({tool(), "--model_name=alexnet_v2", "--checkpoint_path=" + alexnet,
           "--output_file=" + (dir / "x.onnx").string(), "--image_size=32"},
          (dir / "out.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("image_size: 32: alexnet_v2 cannot take 32x32 images"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
}

// Without a checkpoint, as TF-slim's tool: the graph, here with the
// network's initial weights (said, and in the metadata); a .pb name is
// warned about (the file is ONNX).
TEST(ExportInferenceGraph, WithoutACheckpointTheInitialWeightsAndAPbNameIsWarnedAbout) {
  const fs::path dir = fresh_dir("export_initial");
  const fs::path out = dir / "lenet.pb";
  const auto r = run({tool(), "--model_name=lenet", "--num_classes=10", "--use_grayscale",
                      "--output_file=" + out.string()},
                     (dir / "out.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("lenet's initial weights (seed "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("will hold an ONNX model"), std::string::npos) << r.output;
  const onnx::ModelProto m = read_model(out);
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  EXPECT_EQ(metadata(m, "weights"), "initial");
  EXPECT_EQ(dims(m.graph().input(0)), (std::vector<std::string>{"N", "1", "28", "28"}));
}

// An output that exists and is not a regular file: a character device is
// written through and stays a device (as root, a rename over it would
// replace /dev/null by the ONNX file); a directory is refused; a symlink
// keeps pointing at the file it names. The nodes are the test's own
// (mknod), never the system's.
TEST(ExportInferenceGraph, DevicesStayDevicesAndLinksStayLinks) {
  const fs::path dir = fresh_dir("export_nodes");
  const std::string ckpt = save_network(dir, "lenet", 10);
  const std::string log = (dir / "out.log").string();
  const auto exported = [&](const fs::path& out) {
    return run({tool(), "--model_name=lenet", "--checkpoint_path=" + ckpt,
                "--output_file=" + out.string()},
               log);
  };
  const auto type_of = [](const fs::path& p) { return fs::symlink_status(p).type(); };
  fs::create_directory(dir / "folder.onnx");
  auto r = exported(dir / "folder.onnx");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("is a directory"), std::string::npos) << r.output;
  fs::create_directory(dir / "models");
  fs::create_symlink("models/lenet.onnx", dir / "latest.onnx");
  r = exported(dir / "latest.onnx");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(type_of(dir / "latest.onnx"), fs::file_type::symlink);
  EXPECT_EQ(read_model(dir / "models/lenet.onnx").graph().input_size(), 1);
  // A checkpoint that is a device: refused by name, not read without end.
  r = run({tool(), "--model_name=lenet", "--checkpoint_path=/dev/zero",
           "--output_file=" + (dir / "z.onnx").string()},
          log, 60);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("/dev/zero"), std::string::npos) << r.output;
  if (::mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0 &&
      ::mknod((dir / "full").c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) {
    r = exported(dir / "null");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(type_of(dir / "null"), fs::file_type::character);
    r = exported(dir / "full");
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
    EXPECT_EQ(type_of(dir / "full"), fs::file_type::character);
  } else {
    GTEST_SKIP() << "the device nodes: mknod: " << std::strerror(errno) << " (needs CAP_MKNOD)";
  }
}

// A network with an op the exporter does not map.
class SigmoidNetImpl : public models::ClassifierImpl {
 public:
  SigmoidNetImpl() : ClassifierImpl("Sigmoid") {}
  models::ModelOutput forward(torch::Tensor images) override {
    return {torch::sigmoid(images).flatten(1).slice(1, 0, 5), {}};
  }
};

TEST(ExportInferenceGraph, AnOpWithoutAMappingIsAConfigErrorNamingIt) {
  SigmoidNetImpl net;
  exporter::OnnxExportOptions o;
  o.image_size = 4;
  o.model_name = "sigmoid_net";
  try {
    exporter::export_onnx(net, o);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("aten::sigmoid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sigmoid_net"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn
