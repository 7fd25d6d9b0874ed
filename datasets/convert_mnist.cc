#include "datasets/convert_mnist.h"

#include <zlib.h>

#include <filesystem>

#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "src/io/image.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

std::string find_input(const std::string& dir, const std::string& stem) {
  for (const char* ext : {".gz", ""}) {
    fs::path p = fs::path(dir) / (stem + ext);
    if (fs::exists(p)) return p.string();
  }
  throw DataError("missing input '" + (fs::path(dir) / stem).string() +
                  "[.gz]' (MNIST-format idx file)");
}

std::string encode_one(const IdxArray& images, const IdxArray& labels, int64_t i) {
  io::Image img;
  img.height = static_cast<int>(images.dims[1]);
  img.width = static_cast<int>(images.dims[2]);
  img.channels = 1;
  const size_t size = size_t(img.height) * img.width;
  img.pixels.assign(images.data.begin() + i * size, images.data.begin() + (i + 1) * size);
  io::ImageRecord r;
  r.encoded = io::encode_png(img);
  r.format = "png";
  r.label = labels.data[i];
  r.height = img.height;
  r.width = img.width;
  return io::encode_image_example(r);
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw DataError("cannot open '" + path + "'");
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  int got;
  while ((got = gzread(file, buf, sizeof(buf))) > 0) bytes.insert(bytes.end(), buf, buf + got);
  const bool read_error = got < 0;
  gzclose(file);
  if (read_error) throw DataError("'" + path + "': read error (corrupt gzip?)");
  auto be32 = [&](size_t off) {
    return (uint32_t(bytes[off]) << 24) | (uint32_t(bytes[off + 1]) << 16) |
           (uint32_t(bytes[off + 2]) << 8) | uint32_t(bytes[off + 3]);
  };
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    throw DataError("'" + path +
                    "': not an idx file of unsigned bytes "
                    "(bad magic number)");
  }
  const int ndim = bytes[3];
  if (ndim < 1 || ndim > 4 || bytes.size() < 4 + 4 * size_t(ndim)) {
    throw DataError("'" + path + "': bad idx header");
  }
  IdxArray array;
  size_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    array.dims.push_back(be32(4 + 4 * i));
    total *= array.dims.back();
  }
  const size_t header = 4 + 4 * size_t(ndim);
  if (bytes.size() - header != total) {
    throw DataError("'" + path + "': payload has " + std::to_string(bytes.size() - header) +
                    " bytes, header promises " + std::to_string(total));
  }
  array.data.assign(bytes.begin() + header, bytes.end());
  return array;
}

std::vector<ConvertedSplit> convert_mnist(const ConvertOptions& options) {
  ConvertOptions o = options;
  if (o.prefix.empty()) o.prefix = "mnist";
  const std::pair<const char*, const char*> names[] = {{"train", "train"}, {"test", "t10k"}};
  // Both splits stay in memory (idx payloads, 55 MB for MNIST).
  std::vector<std::pair<IdxArray, IdxArray>> data;
  std::vector<SplitSource> splits;
  data.reserve(2);
  for (const auto& [split, stem] : names) {
    data.emplace_back(read_idx(find_input(o.input_dir, std::string(stem) + "-images-idx3-ubyte")),
                      read_idx(find_input(o.input_dir, std::string(stem) + "-labels-idx1-ubyte")));
    const IdxArray& images = data.back().first;
    const IdxArray& labels = data.back().second;
    if (images.dims.size() != 3 || labels.dims.size() != 1 || images.dims[0] != labels.dims[0]) {
      throw DataError(std::string(split) +
                      ": images and labels disagree "
                      "(expected [N,H,W] images and [N] labels)");
    }
    int64_t n = images.dims[0];
    if (o.max_examples > 0) n = std::min(n, o.max_examples);
    splits.push_back(
        {split, n, [&images, &labels](int64_t i) { return encode_one(images, labels, i); }});
  }
  return write_dataset(o, splits);
}

}  // namespace fastnn::datasets
