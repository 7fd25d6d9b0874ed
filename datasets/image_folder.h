// A folder of class sub-folders read directly, without conversion (the
// flower_photos layout):
//
//   dataset_dir/daisy/100080576_f52e8ee070_n.jpg
//   dataset_dir/roses/...
//
// Classes are the sub-folder names in sorted (byte) order, labels 0..C-1.
// Images are the files ending in .jpg, .jpeg or .png (any case); other
// files and hidden entries are ignored. Symbolic links are followed; a
// link loop (or an entry that cannot be examined) is a DataError naming it,
// and a dangling link named like an image is listed, so that reading it is
// a bad image (read_image_file); one among the classes is a DataError (a
// vanished class folder would shift the labels of the classes after it).
// The split is deterministic: all images sorted by path, shuffled by a
// Fisher-Yates pass driven by std::mt19937_64(seed) (portable, unlike
// std::shuffle), and the first round(N * validation_fraction) form
// "validation", the rest "train".
// convert_dataset's image_folder converter lists and splits the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::datasets {

struct ImageFolderSplit {
  /// Image paths of the split, sorted.
  std::vector<std::string> files;
  /// Class of each file.
  std::vector<int64_t> labels;
  /// Sub-folder names, sorted; class i is class_names[i].
  std::vector<std::string> class_names;
};

/// Every image of `dir` (both splits). Throws DataError when `dir` is not
/// a directory, has no class folder, or holds an entry that cannot be
/// examined (a symbolic link loop, permissions), naming it.
ImageFolderSplit scan_image_folder(const std::string& dir);

/// Split "train" or "validation" of `all` (from scan_image_folder); may be
/// empty. Throws ConfigError for another split or a fraction outside [0, 1).
ImageFolderSplit select_split(const ImageFolderSplit& all, const std::string& split,
                              double validation_fraction, uint64_t seed);

/// Lists split "train" or "validation" of `dir`: scan_image_folder, then
/// select_split; DataError also when the split has no image.
ImageFolderSplit list_image_folder(const std::string& dir, const std::string& split,
                                   double validation_fraction, uint64_t seed);

/// The bytes of one listed image file. Throws DataError naming `path`,
/// and saying so when it is a dangling symbolic link.
std::string read_image_file(const std::string& path);

}  // namespace fastnn::datasets
