#include "datasets/convert_cifar10.h"

#include <filesystem>
#include <fstream>

#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

constexpr int kSide = 32;
constexpr size_t kPixels = kSide * kSide * 3;
constexpr size_t kRecord = 1 + kPixels;

std::string input_folder(const std::string& dir) {
  const fs::path nested = fs::path(dir) / "cifar-10-batches-bin";
  return fs::exists(nested / "test_batch.bin") ? nested.string() : dir;
}

// The records of the named batch files, concatenated.
std::string read_batches(const std::string& dir, const std::vector<std::string>& names) {
  std::string all;
  for (const auto& name : names) {
    const std::string path = (fs::path(dir) / name).string();
    if (!fs::exists(path)) {
      throw DataError("missing input '" + path +
                      "' (CIFAR-10 binary batch; unpack cifar-10-binary.tar.gz)");
    }
    std::string bytes = io::read_file(path);
    if (bytes.empty() || bytes.size() % kRecord != 0) {
      throw DataError("'" + path + "': " + std::to_string(bytes.size()) +
                      " bytes is not a whole number of 3073-byte records");
    }
    all += bytes;
  }
  return all;
}

std::string encode_one(const std::string& batch, int64_t i) {
  const auto* rec = reinterpret_cast<const uint8_t*>(batch.data()) + i * kRecord;
  if (rec[0] > 9) {
    throw DataError("CIFAR-10 record " + std::to_string(i) + ": label " + std::to_string(rec[0]) +
                    " is not in [0, 9]");
  }
  io::Image img;
  img.height = img.width = kSide;
  img.channels = 3;
  img.pixels.resize(kPixels);
  const size_t plane = kSide * kSide;
  for (size_t p = 0; p < plane; ++p) {
    for (size_t c = 0; c < 3; ++c) img.pixels[p * 3 + c] = rec[1 + c * plane + p];
  }
  io::ImageRecord r;
  r.encoded = io::encode_png(img);
  r.format = "png";
  r.label = rec[0];
  r.height = kSide;
  r.width = kSide;
  return io::encode_image_example(r);
}

std::vector<std::string> read_names(const std::string& dir) {
  const fs::path meta = fs::path(dir) / "batches.meta.txt";
  if (!fs::exists(meta)) return cifar10_standard_names();
  std::ifstream in(meta);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
      line.pop_back();
    }
    if (!line.empty()) names.push_back(line);
  }
  if (names.size() != 10) {
    throw DataError("'" + meta.string() + "': " + std::to_string(names.size()) +
                    " class names, expected 10");
  }
  return names;
}

}  // namespace

const std::vector<std::string>& cifar10_standard_names() {
  static const std::vector<std::string> names = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return names;
}

std::vector<ConvertedSplit> convert_cifar10(const ConvertOptions& options) {
  ConvertOptions o = options;
  if (o.prefix.empty()) o.prefix = "cifar10";
  const std::string dir = input_folder(o.input_dir);
  o.class_names = read_names(dir);
  const std::string train =
      read_batches(dir, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                         "data_batch_4.bin", "data_batch_5.bin"});
  const std::string test = read_batches(dir, {"test_batch.bin"});
  auto count = [&](const std::string& b) {
    const int64_t n = static_cast<int64_t>(b.size() / kRecord);
    return o.max_examples > 0 ? std::min(n, o.max_examples) : n;
  };
  return write_dataset(
      o, {{"train", count(train), [&train](int64_t i) { return encode_one(train, i); }},
          {"test", count(test), [&test](int64_t i) { return encode_one(test, i); }}});
}

}  // namespace fastnn::datasets
