#include "datasets/convert_mnist.h"

#include <zlib.h>

#include <filesystem>
#include <thread>

#include "fastnn/atomic_file.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "fastnn/image.h"
#include "fastnn/tfrecord.h"

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

std::vector<std::string> encode_range(const IdxArray& images,
                                      const IdxArray& labels,
                                      int64_t begin,
                                      int64_t end) {
  const int h = static_cast<int>(images.dims[1]);
  const int w = static_cast<int>(images.dims[2]);
  const size_t size = size_t(h) * w;
  std::vector<std::string> out;
  out.reserve(end - begin);
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = 1;
  for (int64_t i = begin; i < end; ++i) {
    img.pixels.assign(images.data.begin() + i * size,
                      images.data.begin() + (i + 1) * size);
    io::ImageRecord r;
    r.encoded = io::encode_png(img);
    r.format = "png";
    r.label = labels.data[i];
    r.height = h;
    r.width = w;
    out.push_back(io::encode_image_example(r));
  }
  return out;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError("cannot open '" + path + "'");
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const bool read_error = n < 0;
  gzclose(f);
  if (read_error) throw DataError("'" + path + "': read error (corrupt gzip?)");
  auto be32 = [&](size_t off) {
    return (uint32_t(bytes[off]) << 24) | (uint32_t(bytes[off + 1]) << 16) |
           (uint32_t(bytes[off + 2]) << 8) | uint32_t(bytes[off + 3]);
  };
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    throw DataError("'" + path + "': not an idx file of unsigned bytes "
                    "(bad magic number)");
  }
  const int ndim = bytes[3];
  if (ndim < 1 || ndim > 4 || bytes.size() < 4 + 4 * size_t(ndim)) {
    throw DataError("'" + path + "': bad idx header");
  }
  IdxArray a;
  size_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    a.dims.push_back(be32(4 + 4 * i));
    total *= a.dims.back();
  }
  const size_t header = 4 + 4 * size_t(ndim);
  if (bytes.size() - header != total) {
    throw DataError("'" + path + "': payload has " +
                    std::to_string(bytes.size() - header) +
                    " bytes, header promises " + std::to_string(total));
  }
  a.data.assign(bytes.begin() + header, bytes.end());
  return a;
}

std::vector<ConvertedSplit> convert_mnist(const ConvertOptions& o) {
  fs::create_directories(o.output_dir);
  std::vector<ConvertedSplit> result;
  const std::pair<const char*, const char*> splits[] = {{"train", "train"},
                                                        {"test", "t10k"}};
  for (const auto& [split, stem] : splits) {
    ConvertedSplit cs;
    cs.split = split;
    cs.path = (fs::path(o.output_dir) / ("mnist_" + std::string(split) +
                                         ".tfrecord")).string();
    if (fs::exists(cs.path) && !o.overwrite) {
      cs.skipped_existing = true;
      result.push_back(cs);
      continue;
    }
    IdxArray images = read_idx(find_input(o.input_dir, std::string(stem) + "-images-idx3-ubyte"));
    IdxArray labels = read_idx(find_input(o.input_dir, std::string(stem) + "-labels-idx1-ubyte"));
    if (images.dims.size() != 3 || labels.dims.size() != 1 ||
        images.dims[0] != labels.dims[0]) {
      throw DataError(std::string(split) + ": images and labels disagree "
                      "(expected [N,H,W] images and [N] labels)");
    }
    int64_t n = images.dims[0];
    if (o.max_examples > 0) n = std::min(n, o.max_examples);
    const int threads = std::max(1, o.num_threads);
    std::vector<std::vector<std::string>> parts(threads);
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          parts[t] = encode_range(images, labels, n * t / threads,
                                  n * (t + 1) / threads);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    io::TFRecordWriter writer(cs.path);
    for (const auto& part : parts) {
      for (const auto& rec : part) writer.write(rec);
    }
    writer.close();
    cs.examples = n;
    result.push_back(cs);
  }
  std::string labels_txt;
  for (size_t i = 0; i < o.class_names.size(); ++i) {
    labels_txt += std::to_string(i) + ":" + o.class_names[i] + "\n";
  }
  io::write_file_atomic((fs::path(o.output_dir) / "labels.txt").string(), labels_txt);
  return result;
}

}  // namespace fastnn::datasets
