#include "datasets/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <random>
#include <utility>

#include "fastnn/errors.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

bool hidden(const fs::path& p) {
  return p.filename().string().rfind('.', 0) == 0;
}

}  // namespace

ImageFolderSplit list_image_folder(const std::string& dir,
                                   const std::string& split,
                                   double validation_fraction,
                                   uint64_t seed) {
  if (split != "train" && split != "validation") {
    throw ConfigError(
        "dataset_split_name: '" + split +
        "' is not a split of image_folder; valid: train, validation");
  }
  if (!(validation_fraction >= 0 && validation_fraction < 1)) {
    throw ConfigError(
        "validation_fraction: " + std::to_string(validation_fraction) +
        " is not in [0, 1)");
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DataError("image_folder: '" + dir + "' is not a directory");
  }
  ImageFolderSplit out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && !hidden(e.path())) {
      out.class_names.push_back(e.path().filename().string());
    }
  }
  std::sort(out.class_names.begin(), out.class_names.end());
  if (out.class_names.empty()) {
    throw DataError("image_folder: '" + dir +
                    "' has no class sub-folder (expected " + dir +
                    "/<class>/<image>.jpg)");
  }
  std::vector<std::pair<std::string, int64_t>> all;
  for (size_t c = 0; c < out.class_names.size(); ++c) {
    for (const auto& e :
         fs::directory_iterator(fs::path(dir) / out.class_names[c])) {
      if (e.is_regular_file() && !hidden(e.path()) && is_image_name(e.path())) {
        all.emplace_back(e.path().string(), static_cast<int64_t>(c));
      }
    }
  }
  std::sort(all.begin(), all.end());
  std::mt19937_64 rng(seed);
  for (size_t i = all.size(); i > 1; --i) {
    std::swap(all[i - 1], all[rng() % i]);
  }
  const auto n_val =
      static_cast<size_t>(std::llround(all.size() * validation_fraction));
  const size_t begin = split == "validation" ? 0 : n_val;
  const size_t end = split == "validation" ? n_val : all.size();
  std::vector<std::pair<std::string, int64_t>> part(all.begin() + begin,
                                                    all.begin() + end);
  std::sort(part.begin(), part.end());
  if (part.empty()) {
    throw DataError(
        "image_folder: no image for split '" + split + "' in '" + dir + "' (" +
        std::to_string(all.size()) +
        " images in <class>/*.{jpg,jpeg,png}, validation_fraction " +
        std::to_string(validation_fraction) + ")");
  }
  for (auto& [path, label] : part) {
    out.files.push_back(std::move(path));
    out.labels.push_back(label);
  }
  return out;
}

}  // namespace fastnn::datasets
