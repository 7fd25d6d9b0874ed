#include "tests/datasets/test_data.h"

#include "fastnn/example.h"
#include "fastnn/tfrecord.h"
#include "preprocessing/preprocessing_factory.h"
#include "src/io/image.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(FASTNN_TEST_TMP) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string png_of(int h, int w, int c, uint8_t value) {
  io::Image img;
  img.height = h;
  img.width = w;
  img.channels = c;
  img.pixels.assign(static_cast<size_t>(h) * w * c, value);
  return io::encode_png(img);
}

std::string example_of(const std::string& encoded, int64_t label) {
  io::ImageRecord r;
  r.encoded = encoded;
  r.format = "png";
  r.label = label;
  return io::encode_image_example(r);
}

std::string write_records(const fs::path& path, const std::vector<std::string>& records) {
  fs::create_directories(path.parent_path());
  io::TFRecordWriter w(path.string());
  for (const auto& r : records) w.write(r);
  w.close();
  return path.string();
}

std::string write_id_file(const fs::path& path, int first, int n) {
  std::vector<std::string> records;
  for (int i = first; i < first + n; ++i) {
    records.push_back(example_of(png_of(28, 28, 1, static_cast<uint8_t>(i)), i % 10));
  }
  return write_records(path, records);
}

datasets::PipelineOptions eval_options(std::vector<std::string> files, int channels, int size) {
  datasets::PipelineOptions o;
  o.files = std::move(files);
  o.is_training = false;
  o.batch_size = 4;
  o.channels = channels;
  o.num_classes = 10;
  o.shape = {channels, size, size};
  o.preprocess =
      preprocessing::get_preprocessing(channels == 1 ? "lenet" : "cifarnet", o.shape, false);
  o.num_threads = 2;
  return o;
}

}  // namespace fastnn::testing
