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
    r.format = info.format == io::ImageFormat::kJpeg ? "jpg" : "png";
    r.height = info.height;
    r.width = info.width;
    // TF-slim's readers decode JPEG and PNG records: a BMP or a GIF (its
    // first frame) is stored as the lossless PNG of its pixels.
    if (info.format == io::ImageFormat::kBmp || info.format == io::ImageFormat::kGif) {
      r.encoded = io::encode_png(io::decode_image(r.encoded));
    }
  } catch (const DataError& e) {
    throw DataError("'" + item.first + "': " + e.what());
  }
  r.label = item.second;
  return io::encode_image_example(r);
}

}  // namespace

std::vector<ConvertedSplit> convert_image_folder(const ConvertOptions& requested) {
  ConvertOptions options = requested;
  if (options.prefix.empty()) options.prefix = "image_folder";
  select_split({}, "train", options.validation_fraction, 0);  // a usage error first
  const ImageFolderSplit all = scan_image_folder(options.input_dir);
  if (all.files.empty()) {
    throw DataError("image_folder: no image in '" + options.input_dir +
                    "' (expected <class>/<image>.{jpg,jpeg,png,bmp,gif})");
  }
  options.class_names = all.class_names;
  auto items_of = [&](const char* split) {
    const ImageFolderSplit part =
        select_split(all, split, options.validation_fraction, options.validation_split_seed);
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
    int64_t count = static_cast<int64_t>(items->size());
    if (options.max_examples > 0) count = std::min(count, options.max_examples);
    if (count == 0) continue;
    splits.push_back({name, count, [items](int64_t index) { return encode_one((*items)[index]); }});
  }
  return write_dataset(options, splits);
}

}  // namespace fastnn::datasets
