// The TensorFlow checkpoint reader against files TensorFlow wrote and what
// TensorFlow itself reads from them (tests/data/tf_checkpoints/README.md).
#include "src/io/tf_checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "fastnn/errors.h"
#include "tests/error_of.h"
#include "tests/test_paths.h"

namespace fastnn::io {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path data_root() { return fs::path(FASTNN_SOURCE_DIR) / "tests/data/tf_checkpoints"; }

// The team's shared test data, when it is beside the clone.
fs::path shared_root() {
  const char* env = std::getenv("FASTNN_SHARED_DIR");
  const fs::path shared = env ? fs::path(env) : fs::path(FASTNN_SOURCE_DIR) / "../shared";
  return shared / "testdata/tf_checkpoints";
}

std::string base64_decode(const std::string& in) {
  static const std::string chars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    buf = (buf << 6) | static_cast<uint32_t>(chars.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

// Element i of a numeric tensor as a double.
double element(const TfTensor& t, size_t i) {
  const char* p = t.bytes.data() + i * tf_dtype_bytes(t.dtype);
  switch (t.dtype) {
    case kTfFloat: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case kTfDouble: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case kTfInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case kTfInt64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    default:
      ADD_FAILURE() << "no test decoding for " << tf_dtype_name(t.dtype);
      return 0;
  }
}

// Compares one checkpoint with TensorFlow's reading of it.
void expect_as_tensorflow_reads(const fs::path& root, const fs::path& expected_file) {
  SCOPED_TRACE(expected_file.string());
  std::ifstream in(expected_file);
  const json e = json::parse(in);
  const fs::path where = root / e["checkpoint_prefix"].get<std::string>();
  const TfCheckpoint ckpt = TfCheckpoint::open(where.string());
  const bool v1 = e["format"].get<std::string>().rfind("V1", 0) == 0;
  EXPECT_EQ(ckpt.format(), v1 ? TfCheckpointFormat::kV1 : TfCheckpointFormat::kV2);
  ASSERT_EQ(ckpt.tensors().size(), e["num_variables"].get<size_t>());
  for (size_t k = 0; k < ckpt.tensors().size(); ++k) {
    const json& v = e["variables"][k];
    const TfTensorInfo& info = ckpt.tensors()[k];
    SCOPED_TRACE(info.name);
    EXPECT_EQ(info.name, v["name"].get<std::string>());
    EXPECT_EQ(tf_dtype_name(info.dtype), v["dtype"].get<std::string>());
    EXPECT_EQ(info.shape, v["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(info.num_elements, v["num_elements"].get<int64_t>());
    if (v.contains("index_entry")) {
      const json& ie = v["index_entry"];
      EXPECT_EQ(info.shard_id, ie["shard_id"].get<int>());
      EXPECT_EQ(info.offset, ie["offset"].get<int64_t>());
      EXPECT_EQ(info.size, ie["size"].get<int64_t>());
      EXPECT_EQ(info.crc32c_masked, ie["crc32c_masked"].get<uint32_t>());
      EXPECT_EQ(info.num_slices, ie["num_slices"].get<int>());
    }
    const TfTensor t = ckpt.read(info.name);
    EXPECT_EQ(t.shape, info.shape);
    if (info.dtype == kTfString) {
      ASSERT_EQ(t.strings.size(), v["values"].size());
      for (size_t i = 0; i < t.strings.size(); ++i) {
        const json& s = v["values"][i];
        const std::string want = s.contains("utf8") ? s["utf8"].get<std::string>()
                                                    : base64_decode(s["base64"].get<std::string>());
        EXPECT_EQ(t.strings[i], want);
        EXPECT_EQ(t.strings[i].size(), v["byte_lengths"][i].get<size_t>());
      }
      continue;
    }
    ASSERT_EQ(t.bytes.size(), static_cast<size_t>(info.num_elements) * tf_dtype_bytes(info.dtype));
    const auto n = static_cast<size_t>(info.num_elements);
    if (v.contains("values")) {
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(element(t, i), v["values"][i].get<double>()) << i;
      continue;
    }
    // Large tensors: TensorFlow's exact sums (math.fsum) and extremes.
    long double sum = 0, squares = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
      const double x = element(t, i);
      sum += x;
      squares += static_cast<long double>(x) * x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    const double want_sum = v["sum"].get<double>();
    const double want_squares = v["sum_of_squares"].get<double>();
    EXPECT_NEAR(static_cast<double>(sum), want_sum, 1e-9 * std::max(1.0, std::fabs(want_squares)));
    EXPECT_NEAR(static_cast<double>(squares), want_squares, 1e-9 * std::max(1.0, want_squares));
    EXPECT_EQ(lo, v["min"].get<double>());
    EXPECT_EQ(hi, v["max"].get<double>());
    for (size_t i = 0; i < 8 && i < n; ++i) EXPECT_EQ(element(t, i), v["first8"][i].get<double>());
  }
}

std::vector<fs::path> expected_files(const fs::path& root) {
  std::vector<fs::path> found;
  for (const auto& f : fs::recursive_directory_iterator(root / "expected")) {
    if (f.path().extension() == ".json") found.push_back(f.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(TfCheckpointTest, ReadsEveryTensorflowServingFileAsTensorflowDoes) {
  const auto files = expected_files(data_root());
  ASSERT_EQ(files.size(), 9u);  // 2 V1, 7 V2 (tests/data/tf_checkpoints/README.md)
  for (const auto& f : files) expect_as_tensorflow_reads(data_root(), f);
}

TEST(TfCheckpointTest, ReadsTheTfSlimPersonDetectionCheckpoint) {
  const fs::path root = shared_root();
  const fs::path expected =
      root / "expected/cs249-assignment2/ckpts/person_detection/model.ckpt-963849.json";
  if (!fs::exists(expected)) GTEST_SKIP() << "skipped: no shared test data at " << root;
  expect_as_tensorflow_reads(root, expected);
  // A directory with a "checkpoint" file names the same checkpoint.
  const TfCheckpoint by_dir =
      TfCheckpoint::open((root / "cs249-assignment2/ckpts/person_detection").string());
  EXPECT_EQ(fs::path(by_dir.path()).filename(), "model.ckpt-963849");
  EXPECT_EQ(by_dir.tensors().size(), 441u);
}

fs::path serving(const std::string& rel) { return data_root() / "tensorflow_serving" / rel; }

TEST(TfCheckpointTest, AcceptsThePathsTensorflowUsersPass) {
  const fs::path v2 = serving("saved_model_half_plus_two_cpu/00000123/variables/variables");
  for (const std::string& p :
       {v2.string(), v2.string() + ".index", v2.string() + ".data-00000-of-00001"}) {
    const TfCheckpoint c = TfCheckpoint::open(p);
    EXPECT_EQ(c.format(), TfCheckpointFormat::kV2) << p;
    EXPECT_EQ(c.path(), v2.string()) << p;
    EXPECT_EQ(c.files().size(), 2u) << p;
  }
  const fs::path v1 = serving("session_bundle/half_plus_two/00000123/export");
  for (const std::string& p : {v1.string() + "-00000-of-00001",
                               v1.string() + "-????"
                                             "?-of-00001",
                               v1.string()}) {
    const TfCheckpoint c = TfCheckpoint::open(p);
    EXPECT_EQ(c.format(), TfCheckpointFormat::kV1) << p;
    EXPECT_EQ(c.tensors().size(), 2u) << p;
  }
  EXPECT_TRUE(is_tf_checkpoint(v2.string()));
  EXPECT_TRUE(is_tf_checkpoint(v1.string() + "-00000-of-00001"));
  EXPECT_FALSE(is_tf_checkpoint((data_root() / "README.md").string()));
}

TEST(TfCheckpointTest, ADirectoryIsReadThroughItsCheckpointFile) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "tf_checkpoint_dir";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path src = serving("saved_model_half_plus_three/00000123/variables");
  fs::copy(src, dir);
  std::ofstream(dir / "checkpoint") << "model_checkpoint_path: \"variables\"\n"
                                    << "all_model_checkpoint_paths: \"variables\"\n";
  const TfCheckpoint c = TfCheckpoint::open(dir.string());
  EXPECT_EQ(c.tensors().size(), 3u);
  fs::remove(dir / "checkpoint");
  try {
    TfCheckpoint::open(dir.string());
    ADD_FAILURE() << "a directory without a 'checkpoint' file was read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'checkpoint' file"), std::string::npos) << e.what();
  }
}

// TensorFlow writes a name that is not ASCII as text format's octal escapes
// ("modèle" as mod\303\250le); taken literally, they would name no file (exit 3).
TEST(TfCheckpointTest, TheCheckpointFilesEscapesAreDecodedAsTensorflowsParserDoes) {
  EXPECT_EQ(checkpoint_state_path("model_checkpoint_path: \"mod\\303\\250le\"\n"), "mod\xc3\xa8le");
  EXPECT_EQ(checkpoint_state_path("all_model_checkpoint_paths: \"x\"\r\n"
                                  "model_checkpoint_path: \"a\\\"b\\\\c\\x41\\t\\0010\"\n"),
            std::string("a\"b\\cA\t\0010", 9));
  EXPECT_EQ(checkpoint_state_path("model_checkpoint_path: \"bad\\q\"\n"), std::nullopt);
  EXPECT_EQ(checkpoint_state_path("all_model_checkpoint_paths: \"x\"\n"), std::nullopt);
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / "tf_checkpoint_utf8";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path src = serving("saved_model_half_plus_three/00000123/variables");
  for (const char* ext : {".index", ".data-00000-of-00001"}) {
    fs::copy(src / (std::string("variables") + ext), dir / (std::string("mod\xc3\xa8le") + ext));
  }
  std::ofstream(dir / "checkpoint") << "model_checkpoint_path: \"mod\\303\\250le\"\n";
  EXPECT_EQ(TfCheckpoint::open(dir.string()).tensors().size(), 3u);
}

// Copies a checkpoint's files to the test folder and returns the copy's prefix.
fs::path copy_of(const fs::path& prefix, const std::string& name) {
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& f : fs::directory_iterator(prefix.parent_path())) {
    if (f.path().filename().string().rfind(prefix.filename().string(), 0) == 0) {
      fs::copy(f.path(), dir / f.path().filename());
    }
  }
  return dir / prefix.filename();
}

void flip_byte(const fs::path& file, std::streamoff at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x20));
}

std::string error_of(const std::function<void()>& f) {
  return ::fastnn::testing::error_of<DataError>(f, "(no DataError)");
}

TEST(TfCheckpointTest, BadBytesAreDataErrorsNamingTheFileAndTheTensor) {
  const fs::path p = copy_of(serving("saved_model_half_plus_two_mkl/00000123/variables/variables"),
                             "tf_checkpoint_bad");
  const std::string data = p.string() + ".data-00000-of-00001";
  {
    const TfCheckpoint c = TfCheckpoint::open(p.string());
    const TfTensorInfo* t = c.find("conv2d/kernel");
    ASSERT_NE(t, nullptr);
    flip_byte(data, t->offset);
    const std::string e = error_of([&] { c.read("conv2d/kernel"); });
    EXPECT_NE(e.find("CRC32C mismatch"), std::string::npos) << e;
    EXPECT_NE(e.find("conv2d/kernel"), std::string::npos) << e;
    EXPECT_NO_THROW(c.read("a"));  // the others are still readable
    const std::string missing = error_of([&] { c.read("no/such/variable"); });
    EXPECT_NE(missing.find("no tensor 'no/such/variable'"), std::string::npos) << missing;
  }
  fs::resize_file(data, 8);
  {
    const TfCheckpoint c = TfCheckpoint::open(p.string());
    const std::string e = error_of([&] { c.read(c.tensors().back().name); });
    EXPECT_NE(e.find("past the end"), std::string::npos) << e;
  }
  // Every byte of the index flipped in turn: refused at open (LevelDB's
  // block checksums, then the protos' checks), or read with its values
  // checked; never a crash.
  const std::string index = p.string() + ".index";
  const auto size = static_cast<std::streamoff>(fs::file_size(index));
  int refused = 0;
  for (std::streamoff at = 0; at < size; ++at) {
    flip_byte(index, at);
    try {
      const TfCheckpoint c = TfCheckpoint::open(p.string());
      for (const auto& t : c.tensors()) {
        try {
          c.read(t.name);
        } catch (const DataError&) {
        }
      }
    } catch (const DataError&) {
      ++refused;
    }
    flip_byte(index, at);
  }
  EXPECT_GT(refused, size / 2);
}

TEST(TfCheckpointTest, NothingThereSaysWhatWasLookedFor) {
  const std::string e = error_of([] { TfCheckpoint::open("no/such/model.ckpt-5"); });
  EXPECT_NE(e.find("no/such/model.ckpt-5.index"), std::string::npos) << e;
  const std::string not_tf =
      error_of([] { TfCheckpoint::open((data_root() / "README.md").string()); });
  EXPECT_NE(not_tf.find("not a TensorFlow checkpoint"), std::string::npos) << not_tf;
}

}  // namespace
}  // namespace fastnn::io
