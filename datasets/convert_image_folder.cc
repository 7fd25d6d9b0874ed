#include "datasets/convert_image_folder.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "datasets/image_folder.h"
#include "fastnn/errors.h"
#include "fastnn/example.h"
#include "src/io/image.h"

namespace fastnn::datasets {
namespace {

using Item = std::pair<std::string, int64_t>;  // path, label

std::string encode_one(const Item& item) {
  io::ImageRecord r;
  r.encoded = read_image_file(item.first);
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

std::vector<ConvertedSplit> convert_image_folder(const ConvertOptions& options) {
  ConvertOptions o = options;
  if (o.prefix.empty()) o.prefix = "image_folder";
  select_split({}, "train", o.validation_fraction, 0);  // a usage error first
  const ImageFolderSplit all = scan_image_folder(o.input_dir);
  if (all.files.empty()) {
    throw DataError("image_folder: no image in '" + o.input_dir +
                    "' (expected <class>/<image>.{jpg,jpeg,png})");
  }
  o.class_names = all.class_names;
  auto items_of = [&](const char* split) {
    const ImageFolderSplit part =
        select_split(all, split, o.validation_fraction, o.validation_split_seed);
    auto items = std::make_shared<std::vector<Item>>();
    for (size_t i = 0; i < part.files.size(); ++i) {
      items->emplace_back(part.files[i], part.labels[i]);
    }
    return items;
  };
  auto train = items_of("train");
  auto validation = items_of("validation");
  std::vector<SplitSource> splits;
  for (auto& [name, items] :
       {std::make_pair("train", train), std::make_pair("validation", validation)}) {
    int64_t n = static_cast<int64_t>(items->size());
    if (o.max_examples > 0) n = std::min(n, o.max_examples);
    if (n == 0) continue;
    splits.push_back({name, n, [items](int64_t i) { return encode_one((*items)[i]); }});
  }
  return write_dataset(o, splits);
}

}  // namespace fastnn::datasets
