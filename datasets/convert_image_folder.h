// Converts a folder of class sub-folders (the flower_photos layout) to
// TFRecords, keeping each image's original bytes:
//
//   input/daisy/100080576_f52e8ee070_n.jpg     -> label 0
//   input/roses/...                            -> label 1 (sorted names)
//
// Output: <out>/<prefix>_{train,validation}_NNNNN-of-NNNNN.tfrecord and
// labels.txt (names per convert_common.h). Images are the files ending in
// .jpg, .jpeg or .png (any case); hidden entries are skipped. Records carry
// TF-slim's keys; image/format ("jpg" or "png", as TF-slim's flowers
// converter writes) comes from the bytes, and image/height and image/width
// from the PNG IHDR / JPEG SOF header, without decoding. A file that is
// neither format is a DataError naming it.
//
// The split is the image_folder dataset's: all (path, label) pairs sorted
// by path, a Fisher-Yates pass driven by std::mt19937_64(seed) (index
// rng() % i), the first round(N * validation_fraction) form "validation",
// the rest "train"; each split is written in path order. A split with no
// image is not written.
#pragma once

#include <string>
#include <vector>

#include "datasets/convert_common.h"

namespace fastnn::datasets {

/// Runs the conversion (prefix "image_folder" unless options.prefix is
/// set). ConfigError for a fraction outside [0, 1); DataError for a folder
/// without class sub-folders or images, or an unreadable image.
std::vector<ConvertedSplit> convert_image_folder(const ConvertOptions& options);

}  // namespace fastnn::datasets
