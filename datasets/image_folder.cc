#include "datasets/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <utility>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/log/log.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

// The names read as images, in messages.
constexpr const char* kImageExtensions = "{jpg,jpeg,png,bmp,gif}";

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" || ext == ".gif";
}

bool hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

[[noreturn]] void unusable(const fs::path& p, const std::error_code& ec) {
  throw DataError(
      "image_folder: '" + p.string() +
      "': " + (ec.value() == ELOOP ? "a symbolic link loop (" + ec.message() + ")" : ec.message()));
}

std::string dangling(const fs::path& p) {
  std::error_code ec;
  return "image_folder: '" + p.string() + "': a dangling symbolic link (to '" +
         fs::read_symlink(p, ec).string() + "', which does not exist)";
}

// What `p` is, following symbolic links: kDangling for a link to nothing;
// a loop or an error throws DataError naming p.
enum class Kind { kFile, kDirectory, kOther, kDangling };

Kind kind_of(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() == fs::file_type::not_found) {
    std::error_code lec;
    return fs::is_symlink(fs::symlink_status(p, lec)) ? Kind::kDangling : Kind::kOther;
  }
  if (ec) unusable(p, ec);
  if (fs::is_directory(st)) return Kind::kDirectory;
  return fs::is_regular_file(st) ? Kind::kFile : Kind::kOther;
}

// The non-hidden entries of folder `dir`, sorted.
std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!hidden(it->path())) out.push_back(it->path());
  }
  if (ec) unusable(dir, ec);
  std::sort(out.begin(), out.end());
  return out;
}

// Class names as labels.txt holds them and TF-slim's read_label_file reads
// them back ("id:name" lines of UTF-8): no line break, nothing but UTF-8.
// Names that differ only in case are two classes here and one on a
// case-insensitive file system: a warning.
void check_class_names(const std::string& dir, const std::vector<std::string>& names) {
  std::map<std::string, std::string> folded;
  for (const auto& name : names) {
    const char* bad = name.find_first_of("\n\r") != std::string::npos ? "a line break"
                      : !config::is_utf8(name)                        ? "bytes that are not UTF-8"
                                                                      : nullptr;
    if (bad) {
      throw DataError("image_folder: the class folder " + config::quote_value(name) + " of '" +
                      dir + "' has " + bad +
                      " in its name, which labels.txt cannot hold: rename the folder");
    }
    std::string key = name;
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto [it, fresh] = folded.emplace(key, name);
    if (!fresh) {
      log::warning() << "image_folder: the classes " << config::quote_value(it->second) << " and "
                     << config::quote_value(name) << " of '" << dir
                     << "' differ only in case: two classes here, one folder on a "
                        "case-insensitive file system";
    }
  }
}

// The class folders of `dir`, sorted: its sub-folders.
std::vector<std::string> list_classes(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DataError("image_folder: '" + dir + "' is not a directory" +
                    (ec && ec.value() != ENOENT ? " (" + ec.message() + ")" : ""));
  }
  std::vector<std::string> class_names;
  for (const auto& entry : entries(dir)) {
    const Kind kind = kind_of(entry);
    if (kind == Kind::kDirectory) class_names.push_back(entry.filename().string());
    // A class folder that vanished would shift every later class's label.
    if (kind == Kind::kDangling) {
      throw DataError(dangling(entry) +
                      ": it may have been a class folder; restore its "
                      "target or remove it");
    }
  }
  if (class_names.empty()) {
    throw DataError("image_folder: '" + dir + "' has no class sub-folder (expected " + dir +
                    "/<class>/<image>.jpg)");
  }
  check_class_names(dir, class_names);
  return class_names;
}

// The images of every class folder, each with its class's label, in folder
// order; a warning counts what else the folders hold.
std::vector<std::pair<std::string, int64_t>> list_images(
    const std::string& dir, const std::vector<std::string>& class_names) {
  std::vector<std::pair<std::string, int64_t>> all;
  // What the class folders hold besides images, counted by kind.
  int64_t not_images = 0, folders = 0, others = 0;
  for (size_t class_index = 0; class_index < class_names.size(); ++class_index) {
    for (const auto& entry : entries(fs::path(dir) / class_names[class_index])) {
      const Kind kind = kind_of(entry);
      if (!is_image_name(entry)) {
        ++(kind == Kind::kDirectory ? folders : not_images);
      } else if (kind == Kind::kFile || kind == Kind::kDangling) {
        all.emplace_back(entry.string(), static_cast<int64_t>(class_index));
      } else {
        ++others;
      }
    }
  }
  if (not_images + folders + others > 0) {
    log::warning() << "image_folder: skipped in the class folders of '" << dir
                   << "': " << not_images << " file(s) not named *." << kImageExtensions << ", "
                   << folders << " sub-folder(s) (classes are the top level only), " << others
                   << " other(s) named like images (devices, FIFOs, folders)";
  }
  return all;
}

// A warning for each class without an image.
void warn_empty_classes(const std::string& dir, const std::vector<std::string>& class_names,
                        const std::vector<std::pair<std::string, int64_t>>& all) {
  std::vector<int64_t> per_class(class_names.size(), 0);
  for (const auto& [path, label] : all) ++per_class[static_cast<size_t>(label)];
  for (size_t c = 0; c < per_class.size(); ++c) {
    if (per_class[c] > 0) continue;
    log::warning() << "image_folder: class " << config::quote_value(class_names[c]) << " (label "
                   << c << ") of '" << dir
                   << "' has no image; it keeps its label, as TF-slim's converters do";
  }
}

}  // namespace

ImageFolderSplit scan_image_folder(const std::string& dir) {
  ImageFolderSplit out;
  out.class_names = list_classes(dir);
  std::vector<std::pair<std::string, int64_t>> all = list_images(dir, out.class_names);
  warn_empty_classes(dir, out.class_names, all);
  std::sort(all.begin(), all.end());
  for (auto& [path, label] : all) {
    out.files.push_back(std::move(path));
    out.labels.push_back(label);
  }
  return out;
}

ImageFolderSplit select_split(const ImageFolderSplit& all_images, const std::string& split,
                              double validation_fraction, uint64_t seed) {
  if (split != "train" && split != "validation") {
    throw ConfigError("dataset_split_name: '" + split +
                      "' is not a split of image_folder; valid: train, validation");
  }
  if (!(validation_fraction >= 0 && validation_fraction < 1)) {
    throw ConfigError("validation_fraction: " + config::format_double(validation_fraction) +
                      " is not in [0, 1)");
  }
  std::vector<size_t> order(all_images.files.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng() % i]);
  }
  const auto n_val = static_cast<size_t>(std::llround(order.size() * validation_fraction));
  const size_t begin = split == "validation" ? 0 : n_val;
  const size_t end = split == "validation" ? n_val : order.size();
  std::vector<size_t> part(order.begin() + begin, order.begin() + end);
  std::sort(part.begin(), part.end());  // the paths are sorted
  ImageFolderSplit out;
  out.class_names = all_images.class_names;
  for (size_t i : part) {
    out.files.push_back(all_images.files[i]);
    out.labels.push_back(all_images.labels[i]);
  }
  return out;
}

ImageFolderSplit list_image_folder(const std::string& dir, const std::string& split,
                                   double validation_fraction, uint64_t seed) {
  // The arguments first: a bad split name is a usage error whatever dir holds.
  select_split({}, split, validation_fraction, seed);
  const ImageFolderSplit all = scan_image_folder(dir);
  ImageFolderSplit out = select_split(all, split, validation_fraction, seed);
  if (out.files.empty()) {
    throw DataError("image_folder: no image for split '" + split + "' in '" + dir + "' (" +
                    std::to_string(all.files.size()) + " images in <class>/*." + kImageExtensions +
                    ", validation_fraction " + config::format_double(validation_fraction) + ")");
  }
  return out;
}

std::string read_image_file(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_symlink(fs::symlink_status(p, ec)) && !fs::exists(p, ec) && !ec) {
    throw DataError(dangling(p));
  }
  return io::read_file(path);
}

}  // namespace fastnn::datasets
