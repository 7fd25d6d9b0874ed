// What convert_dataset wrote into a folder, so that no reader combines the
// files of two conversions. dataset_dir/<prefix>.manifest:
//
//   fastnn dataset manifest 1
//   state complete                     ("converting" while files move)
//   file train 107 84012 mnist_train_00000-of-00003.tfrecord
//   ...                                (split, records, bytes, file name)
//
// A conversion writes it with state "converting" before it renames its
// first output into place, and with state "complete" after its last
// rename and removal (each time by an atomic rename). A reader of the
// prefix's split takes the manifest's files of that split instead of a
// glob and checks each file's size; "converting" means a conversion was
// killed half-way, so the folder may hold files of two conversions and is
// refused until convert_dataset runs again. A folder without a manifest
// (TF-slim's, TensorFlow's, an older convert_dataset's) is read by glob.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fastnn::datasets {

struct ManifestFile {
  std::string split;
  /// File name in the manifest's folder.
  std::string name;
  int64_t records = 0;
  uint64_t bytes = 0;
};

struct Manifest {
  /// False: the conversion that wrote it was still moving files into place.
  bool complete = false;
  std::vector<ManifestFile> files;
};

/// dir/<prefix>.manifest
std::string manifest_path(const std::string& dir, const std::string& prefix);

/// The manifest at `path`; nullopt when there is none. Throws DataError
/// naming `path` when it cannot be read or is not a manifest.
std::optional<Manifest> read_manifest(const std::string& path);

/// Replaces the manifest at `path` atomically.
void write_manifest(const std::string& path, const Manifest& manifest);

/// The paths of `split`'s files in the manifest at `path`, in its order.
/// Throws DataError naming the manifest when it is not complete, lists no
/// file of `split`, or a listed file is missing or not of its size.
std::vector<std::string> manifest_split_files(const std::string& path, const Manifest& manifest,
                                              const std::string& split);

/// For files chosen without a manifest (train_files, eval_files): throws
/// DataError when a file's folder holds a manifest that is not complete
/// and whose prefix begins the file's name, or a complete one that lists
/// the file with another size.
void check_files_against_manifests(const std::vector<std::string>& files);

}  // namespace fastnn::datasets
