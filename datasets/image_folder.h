// A folder of class sub-folders read directly, without conversion (the
// flower_photos layout):
//
//   dataset_dir/daisy/100080576_f52e8ee070_n.jpg
//   dataset_dir/roses/...
//
// Classes are the sub-folder names in sorted (byte) order, labels 0..C-1.
// Images are the files ending in .jpg, .jpeg or .png (any case); other
// files and hidden entries are ignored. The split is deterministic: all
// images sorted by path, shuffled by a Fisher-Yates pass driven by
// std::mt19937_64(seed) (portable, unlike std::shuffle), and the first
// round(N * validation_fraction) form "validation", the rest "train".
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

/// Lists split "train" or "validation" of `dir`. Throws ConfigError for
/// another split or a fraction outside [0, 1), DataError when `dir` has no
/// class folder or the split has no image.
ImageFolderSplit list_image_folder(const std::string& dir,
                                   const std::string& split,
                                   double validation_fraction,
                                   uint64_t seed);

}  // namespace fastnn::datasets
