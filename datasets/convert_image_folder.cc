#include "datasets/convert_image_folder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <utility>

#include "src/io/atomic_file.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "src/io/image.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

using Item = std::pair<std::string, int64_t>;  // path, label

bool wanted(const fs::directory_entry& e, bool directory) {
  const std::string name = e.path().filename().string();
  if (name.empty() || name[0] == '.')
    return false;
  if (directory)
    return e.is_directory();
  std::string ext = e.path().extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e.is_regular_file() &&
         (ext == ".jpg" || ext == ".jpeg" || ext == ".png");
}

std::string encode_one(const Item& item) {
  io::ImageRecord r;
  r.encoded = io::read_file(item.first);
  try {
    const io::ImageInfo info = io::read_image_info(r.encoded);
    r.format = info.format == io::ImageFormat::kPng ? "png" : "jpg";
    r.height = info.height;
    r.width = info.width;
  } catch (const DataError& e) {
    throw DataError("'" + item.first + "': " + e.what());
  }
  r.label = item.second;
  return io::encode_image_example(r);
}

}  // namespace

std::vector<ConvertedSplit> convert_image_folder(
    const ConvertOptions& options) {
  ConvertOptions o = options;
  if (o.prefix.empty())
    o.prefix = "image_folder";
  if (!(o.validation_fraction >= 0 && o.validation_fraction < 1)) {
    throw ConfigError(
        "validation_fraction: " + std::to_string(o.validation_fraction) +
        " is not in [0, 1)");
  }
  std::error_code ec;
  if (!fs::is_directory(o.input_dir, ec)) {
    throw DataError("image_folder: '" + o.input_dir + "' is not a directory");
  }
  o.class_names.clear();
  for (const auto& e : fs::directory_iterator(o.input_dir)) {
    if (wanted(e, true))
      o.class_names.push_back(e.path().filename().string());
  }
  std::sort(o.class_names.begin(), o.class_names.end());
  std::vector<Item> all;
  for (size_t c = 0; c < o.class_names.size(); ++c) {
    for (const auto& e :
         fs::directory_iterator(fs::path(o.input_dir) / o.class_names[c])) {
      if (wanted(e, false))
        all.emplace_back(e.path().string(), int64_t(c));
    }
  }
  if (all.empty()) {
    throw DataError("image_folder: no image in '" + o.input_dir +
                    "' (expected <class>/<image>.{jpg,jpeg,png})");
  }
  std::sort(all.begin(), all.end());
  std::mt19937_64 rng(o.validation_split_seed);
  for (size_t i = all.size(); i > 1; --i)
    std::swap(all[i - 1], all[rng() % i]);
  const auto n_val =
      static_cast<size_t>(std::llround(all.size() * o.validation_fraction));
  auto train =
      std::make_shared<std::vector<Item>>(all.begin() + n_val, all.end());
  auto validation =
      std::make_shared<std::vector<Item>>(all.begin(), all.begin() + n_val);
  std::vector<SplitSource> splits;
  for (auto& [name, items] : {std::make_pair("train", train),
                              std::make_pair("validation", validation)}) {
    std::sort(items->begin(), items->end());
    int64_t n = static_cast<int64_t>(items->size());
    if (o.max_examples > 0)
      n = std::min(n, o.max_examples);
    if (n == 0)
      continue;
    splits.push_back(
        {name, n, [items](int64_t i) { return encode_one((*items)[i]); }});
  }
  return write_dataset(o, splits);
}

}  // namespace fastnn::datasets
