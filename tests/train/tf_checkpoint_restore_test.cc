// TensorFlow checkpoints restored into this port's networks: keys, layouts,
// and a TF-slim network trained by TensorFlow classifying the images its
// authors tested it with (tests/data/tf_checkpoints/README.md).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "src/io/tf_checkpoint.h"
#include "src/train/checkpoint.h"
#include "src/train/train_state.h"
#include "tests/test_paths.h"

namespace fastnn::train {
namespace {
namespace fs = std::filesystem;

fs::path serving(const std::string& rel) {
  return fs::path(FASTNN_SOURCE_DIR) / "tests/data/tf_checkpoints/tensorflow_serving" / rel;
}

fs::path shared_root() {
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  const fs::path shared = env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared";
  return shared / "testdata/tf_checkpoints";
}

TEST(TfCheckpointRestore, EveryNameTensorflowUsersPassResolvesAndLoads) {
  const std::string prefix =
      serving("saved_model_half_plus_two_mkl/00000123/variables/variables").string();
  for (const std::string& p : {prefix, prefix + ".index", prefix + ".data-00000-of-00001"}) {
    EXPECT_EQ(resolve_checkpoint(p), prefix) << p;
  }
  const TensorMap m = load_tensors(prefix);
  ASSERT_TRUE(m.count("model/conv2d/kernel"));
  EXPECT_EQ(m.at("model/conv2d/kernel").sizes(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_FLOAT_EQ(m.at("model/a").item<float>(), 0.5f);
  const std::string v1 = serving("bad_half_plus_two/00000123/export").string();
  EXPECT_EQ(resolve_checkpoint(v1), v1);
  EXPECT_FLOAT_EQ(load_tensors(v1).at("model/Variable_1").item<float>(), 2.0f);
  EXPECT_THROW(resolve_checkpoint("no/such/model.ckpt-7"), DataError);
}

// TFLite Micro's 96x96 8-bit grayscale BMPs (palette i = (i,i,i), rows
// bottom-up, pixels from byte 1078), as a [1,1,96,96] float image in [0,1].
torch::Tensor read_bmp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes.size(), 1078u + 96 * 96);
  auto img = torch::empty({96, 96});
  for (int r = 0; r < 96; ++r) {
    for (int c = 0; c < 96; ++c) {
      img[95 - r][c] = static_cast<uint8_t>(bytes[1078 + r * 96 + c]) / 255.0f;
    }
  }
  return img.view({1, 1, 96, 96});
}

TEST(TfCheckpointRestore, TfSlimMobilenetFromTensorflowTellsPersonFromNoPerson) {
  const fs::path root = shared_root();
  const fs::path dir = root / "cs249-assignment2/ckpts/person_detection";
  if (!fs::exists(dir)) GTEST_SKIP() << "skipped: no shared test data at " << root;
  // TF-slim's mobilenet_v1_025 as the checkpoint's authors trained it:
  // grayscale 96x96, 2 classes (0 no person, 1 person), moving averages.
  models::ModelOptions o;
  o.num_classes = 2;
  o.in_channels = 1;
  o.image_size = 96;
  o.dropout_keep_prob = 1.0;
  auto model = models::find_model("mobilenet_v1_025").create(o);
  const std::string path = resolve_checkpoint(dir.string());
  RestoreOptions r;
  r.use_moving_averages = true;
  const TensorMap tensors = load_tensors(path);
  const int restored = restore_model(*model, tensors, path, r);
  EXPECT_EQ(restored, 137);  // every model variable of the checkpoint
  // TF's int64 global_step comes along (so evaluations do not say step 0).
  ASSERT_TRUE(tensors.count("global_step"));
  EXPECT_EQ(tensors.at("global_step").item<int64_t>(), 963849);
  // The layouts: a depthwise kernel [kh,kw,C,M] is [C*M,1,kh,kw] here.
  const io::TfCheckpoint tf = io::TfCheckpoint::open(path);
  const std::string dw = "MobilenetV1/Conv2d_1_depthwise/depthwise_weights";
  const io::TfTensor raw = tf.read(dw + "/ExponentialMovingAverage");
  auto hwcm = torch::from_blob(const_cast<char*>(raw.bytes.data()), raw.shape);
  for (const auto& v : models::model_variables(*model)) {
    if (v.name == dw) EXPECT_TRUE(torch::equal(v.tensor[3][0][1][2], hwcm[1][2][3][0]));
  }
  model->eval();
  torch::NoGradGuard no_grad;
  // Inception preprocessing's last step: [0,1] -> [-1,1].
  const auto images = torch::cat({read_bmp(root / "tflite-micro/tensorflow/lite/micro/examples/"
                                                  "person_detection/testdata/person.bmp"),
                                  read_bmp(root / "tflite-micro/tensorflow/lite/micro/examples/"
                                                  "person_detection/testdata/no_person.bmp")}) *
                          2.0 -
                      1.0;
  const auto logits = model->forward(images).logits;
  EXPECT_EQ(logits.argmax(1)[0].item<int64_t>(), 1) << logits;
  EXPECT_EQ(logits.argmax(1)[1].item<int64_t>(), 0) << logits;
}

}  // namespace
}  // namespace fastnn::train

namespace fastnn::train {
namespace {

// A variable the checkpoint holds as integers is there, not missing, and
// ignore_missing_vars does not drop it (not "missing", then trained from
// scratch with exit 0).
TEST(TfCheckpointRestore, AVariableOfAnotherTypeIsPresentNotMissing) {
  models::ModelOptions o;
  o.num_classes = 10;
  o.in_channels = 1;
  auto model = models::find_model("lenet").create(o);
  TensorMap ckpt;
  for (const auto& v : models::model_variables(*model)) ckpt[model_key(v.name)] = v.tensor.clone();
  ckpt[model_key("LeNet/conv1/weights")] = torch::zeros({32, 1, 5, 5}, torch::kInt32);
  RestoreOptions r;
  r.ignore_missing = true;
  try {
    restore_model(*model, ckpt, "ckpt", r);
    ADD_FAILURE() << "an int32 variable was restored or skipped";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("present but int32: LeNet/conv1/weights"),
              std::string::npos)
        << e.what();
  }
}

// TF-slim reads the shadows only when moving_average_decay is set, and then
// every one (never the shadows a checkpoint has mixed with the raw
// weights of the rest; moving_average_decay=None opts out).
TEST(TfCheckpointRestore, MovingAveragesAreAllOrNothingAndOnlyWhenAsked) {
  models::ModelOptions o;
  o.num_classes = 10;
  o.in_channels = 1;
  auto model = models::find_model("lenet").create(o);
  TensorMap all, some;
  int k = 0;
  for (const auto& v : models::model_variables(*model)) {
    all[model_key(v.name)] = some[model_key(v.name)] = v.tensor.clone();
    all[ema_key(v.name)] = v.tensor.clone();
    if (k++ % 2 == 0) some[ema_key(v.name)] = v.tensor.clone();
  }
  EXPECT_TRUE(use_moving_averages(*model, all, "c", MovingAverages::kAuto));
  EXPECT_TRUE(use_moving_averages(*model, all, "c", MovingAverages::kUse));
  EXPECT_FALSE(use_moving_averages(*model, all, "c", MovingAverages::kRaw));
  EXPECT_FALSE(use_moving_averages(*model, some, "c", MovingAverages::kAuto));
  EXPECT_THROW(use_moving_averages(*model, some, "c", MovingAverages::kUse), ConfigError);
  TensorMap none;
  for (const auto& v : models::model_variables(*model)) none[model_key(v.name)] = v.tensor;
  EXPECT_FALSE(use_moving_averages(*model, none, "c", MovingAverages::kAuto));
  EXPECT_THROW(use_moving_averages(*model, none, "c", MovingAverages::kUse), ConfigError);
}

}  // namespace
}  // namespace fastnn::train
