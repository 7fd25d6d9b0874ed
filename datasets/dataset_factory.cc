#include "datasets/dataset_factory.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/image_folder.h"
#include "datasets/manifest.h"
#include "datasets/mnist.h"
#include "datasets/sharding.h"
#include "datasets/slim_datasets.h"
#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

const std::vector<DatasetSpec>& table() {
  static const std::vector<DatasetSpec> kTable = {
      // FastNN's mock: synthetic images at the model's size, no I/O.
      {"mock",
       "",
       {{"train", 1000000}, {"validation", 10000}, {"test", 10000}},
       1000,
       3,
       DatasetSource::kSynthetic,
       ""},
      mnist_spec(),
      fashion_mnist_spec(),
      cifar10_spec(),
      flowers_spec(),
      imagenet_spec(),
      {"tfrecord", "", {}, 0, 3, DatasetSource::kCustomTFRecord, ""},
      {"image_folder",
       "",
       {{"train", 0}, {"validation", 0}},
       0,
       3,
       DatasetSource::kImageFolder,
       ""},
  };
  return kTable;
}

}  // namespace

std::vector<std::string> dataset_names() { return names_of(table()); }

const DatasetSpec& find_dataset(const std::string& name) {
  for (const auto& d : table()) {
    if (d.name == name) return d;
  }
  throw ConfigError("dataset_name: " + config::quote_value(name) +
                    " is not an available dataset; available: " + join_list(dataset_names()));
}

std::vector<std::string> read_labels_file(const std::string& path, int64_t* skipped) {
  std::vector<std::string> labels;
  if (skipped) *skipped = 0;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return labels;
  std::istringstream in(io::read_file(path, size_t{64} << 20));
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (!line.empty() && line.back() == '\r') line.pop_back();
    int64_t id = -1;
    if (colon != std::string::npos) {
      config::parse_int(config::trim(std::string_view(line).substr(0, colon)), &id);
    }
    if (id < 0 || id > 1000000) {
      if (skipped && !config::trim(line).empty()) ++*skipped;  // junk, counted
      continue;
    }
    if (labels.size() <= static_cast<size_t>(id)) labels.resize(id + 1);
    labels[id] = line.substr(colon + 1);
  }
  return labels;
}

std::vector<std::string> expand_file_list(const std::string& list, const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& pattern : split_list(list)) {
    const bool joined = !dir.empty() && fs::path(pattern).is_relative();
    const std::string item = joined ? (fs::path(dir) / pattern).string() : pattern;
    glob_t g{};
    const int rc = glob(item.c_str(), 0, nullptr, &g);
    size_t matched = 0, temporaries = 0;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) {
      // A *.tmp-PID file is a write in progress (or killed): never data.
      if (io::is_temporary_name(fs::path(g.gl_pathv[i]).filename().string())) {
        ++temporaries;
        continue;
      }
      files.emplace_back(g.gl_pathv[i]);
      ++matched;
    }
    globfree(&g);
    if (matched == 0) {
      throw DataError("no file matches " + config::quote_value(pattern) +
                      (joined ? " in " + config::quote_value(dir) : std::string()) +
                      (temporaries > 0 ? " (only unfinished writes, *.tmp-PID)" : ""));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

namespace {

// The files of a split with a fixed layout, sorted; DataError naming the
// patterns when there are none.
std::vector<std::string> find_split_files(const DatasetSpec& spec, const std::string& split,
                                          const std::string& dir) {
  // Written by convert_dataset: its manifest names the files.
  if (!spec.file_prefix.empty()) {
    const std::string path = manifest_path(dir, spec.file_prefix);
    if (const auto manifest = read_manifest(path))
      return manifest_split_files(path, *manifest, split);
  }
  std::vector<std::string> patterns;
  if (!spec.file_pattern.empty()) {
    std::string pattern = spec.file_pattern;
    pattern.replace(pattern.find("%s"), 2, split);
    patterns.push_back(pattern);
  } else {
    const std::string base = spec.file_prefix + "_" + split;
    patterns = {base + ".tfrecord",
                base + "_[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].tfrecord"};
  }
  std::vector<std::string> found;
  for (const auto& pattern : patterns) {
    try {
      auto files = expand_file_list(pattern, dir);
      found.insert(found.end(), files.begin(), files.end());
    } catch (const DataError&) {
    }
  }
  if (found.empty()) {
    throw DataError("dataset " + spec.name + ": no file for split " + config::quote_value(split) +
                    " in " + config::quote_value(dir) + " (looked for " + join_list(patterns) +
                    "); run convert_dataset first");
  }
  std::sort(found.begin(), found.end());
  return found;
}

void resolve_image_folder(const DatasetOptions& options, DatasetInfo& info) {
  if (options.dir.empty()) {
    throw ConfigError(options.where("dataset_dir") +
                      ": dataset_dir: not set (the folder of class sub-folders)");
  }
  auto split = list_image_folder(options.dir, info.split, options.validation_fraction.value_or(0.1),
                                 static_cast<uint64_t>(options.validation_split_seed));
  info.files = std::move(split.files);
  info.file_labels = std::move(split.labels);
  info.records_per_file.assign(info.files.size(), 1);
  info.num_samples = static_cast<int64_t>(info.files.size());
  info.num_classes = static_cast<int64_t>(split.class_names.size());
  info.labels = std::move(split.class_names);
}

void resolve_custom(const DatasetOptions& options, const std::string& files, DatasetInfo& info) {
  if (files.empty()) {
    throw ConfigError(
        options.where(info.split == options.eval_split ? "eval_files" : "train_files") +
        ": dataset tfrecord: no file list for split '" + info.split +
        "' (set train_files, and eval_files for evaluation, to "
        "comma-separated files or globs relative to dataset_dir)");
  }
  if (!options.num_classes) {
    throw ConfigError(options.where("num_classes") +
                      ": num_classes: required with dataset_name=tfrecord");
  }
  info.files = expand_file_list(files, options.dir);
  check_files_against_manifests(info.files);
  info.num_classes = *options.num_classes + options.labels_offset;
  info.num_samples = 0;
  for (const auto& f : info.files) {
    info.records_per_file.push_back(count_tfrecords(f));
    info.num_samples += info.records_per_file.back();
  }
  if (info.num_samples == 0) {
    throw DataError("dataset tfrecord: the " + std::to_string(info.files.size()) +
                    " file(s) matching " + config::quote_value(files) + " hold no record");
  }
}

bool spec_has(const DatasetSpec& spec, const std::string& split) {
  for (const auto& [name, n] : spec.splits) {
    if (name == split) return true;
  }
  return false;
}

// A validation split held out of TFRecord training files is asked for.
bool holds_out(const DatasetOptions& options, const DatasetSpec& spec) {
  return options.validation_fraction.value_or(0) > 0 &&
         (spec.source == DatasetSource::kTFRecord || spec.source == DatasetSource::kCustomTFRecord);
}

// The dataset's own validation files stand in for the test split it lacks.
bool validation_serves_as_test(const DatasetOptions& options, const DatasetSpec& spec) {
  return holds_out(options, spec) && !spec_has(spec, "test") && spec_has(spec, "validation");
}

// Counts each file's records of info's split (header-only reads).
void count_split_records(DatasetInfo& info) {
  // The tfrecord row has counted every file already.
  const bool counted = info.records_per_file.size() == info.files.size();
  info.num_samples = 0;
  for (size_t i = 0; i < info.files.size(); ++i) {
    const int64_t all = counted ? info.records_per_file[i] : count_tfrecords(info.files[i]);
    const int64_t mine =
        count_in_split(info.holdout, fs::path(info.files[i]).filename().string(), all);
    if (counted) {
      info.records_per_file[i] = mine;
    } else {
      info.records_per_file.push_back(mine);
    }
    info.num_samples += mine;
  }
}

}  // namespace

bool has_split(const DatasetOptions& options, const std::string& split) {
  const DatasetSpec& spec = find_dataset(options.name);
  if (spec.source == DatasetSource::kImageFolder) {
    return split == "train" ||
           (split == "validation" && options.validation_fraction.value_or(0.1) > 0);
  }
  if (holds_out(options, spec) && split == "validation") return true;
  if (validation_serves_as_test(options, spec) && split == "test") return true;
  if (spec.source == DatasetSource::kCustomTFRecord) {
    return split == options.train_split ||
           (split == options.eval_split && !options.eval_files.empty());
  }
  return spec_has(spec, split);
}

namespace {

// The split whose files are read: a held-out validation reads the training
// split's, a test without files of its own the validation's. Sets the
// split's holdout.
std::string files_split_of(const DatasetOptions& options, const DatasetSpec& spec,
                           const std::string& split, DatasetInfo& info) {
  if (!holds_out(options, spec)) return split;
  if (options.train_split == "validation") {
    throw ConfigError(options.where("validation_fraction") +
                      ": validation_fraction: the validation split is held out of "
                      "the training split, so dataset_split_name cannot be "
                      "'validation' (set validation_fraction=None to train on "
                      "the dataset's own validation files)");
  }
  const double fraction = *options.validation_fraction;
  const auto seed = static_cast<uint64_t>(options.validation_split_seed);
  if (split == "validation") {
    info.holdout = Holdout{fraction, seed, true};
    return options.train_split;
  }
  if (split == options.train_split) {
    info.holdout = Holdout{fraction, seed, false};
  } else if (split == "test" && validation_serves_as_test(options, spec)) {
    return "validation";
  }
  return split;
}

// A row of the table with its own splits: the split's size, then its files
// (found in dataset_dir, or train_files / eval_files), which may not all be
// empty.
void resolve_table_files(const DatasetOptions& options, const DatasetSpec& spec,
                         const std::string& split, const std::string& files_split,
                         const std::string& files_override, DatasetInfo& info) {
  bool known_split = false;
  std::vector<std::string> split_names;
  for (const auto& [name, size] : spec.splits) {
    split_names.push_back(name);
    if (name == files_split) {
      info.num_samples = size;
      known_split = true;
    }
  }
  if (!known_split) {
    throw ConfigError("dataset_split_name: " + config::quote_value(split) + " is not a split of " +
                      spec.name + "; valid: " + join_list(split_names));
  }
  if (info.synthetic) return;
  if (options.dir.empty() && files_override.empty()) {
    throw ConfigError(options.where("dataset_dir") +
                      ": dataset_dir: not set (the "
                      "folder holding " +
                      spec.name + "'s TFRecord files)");
  }
  if (files_override.empty()) {
    info.files = find_split_files(spec, files_split, options.dir);
  } else {
    info.files = expand_file_list(files_override, options.dir);
    check_files_against_manifests(info.files);
  }
  uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& file : info.files) bytes += fs::file_size(file, ec);
  if (bytes == 0) {
    throw DataError("dataset " + spec.name + ": the file(s) of split '" + split +
                    "' are empty: " + join_list(info.files));
  }
}

}  // namespace

DatasetInfo get_dataset(const DatasetOptions& options, const std::string& split) {
  const DatasetSpec& spec = find_dataset(options.name);
  DatasetInfo info;
  info.name = spec.name;
  info.split = split;
  info.num_classes = spec.num_classes;
  info.channels = spec.channels;
  info.synthetic = spec.source == DatasetSource::kSynthetic;
  if (spec.source == DatasetSource::kImageFolder) {
    resolve_image_folder(options, info);
    return info;
  }
  const std::string files_split = files_split_of(options, spec, split, info);
  const std::string& files_override = files_split == options.train_split ? options.train_files
                                      : split == options.eval_split && split == files_split
                                          ? options.eval_files
                                          : std::string();
  if (spec.source == DatasetSource::kCustomTFRecord) {
    resolve_custom(options, files_override, info);
  } else {
    resolve_table_files(options, spec, split, files_split, files_override, info);
    if (info.synthetic) return info;
  }
  if (info.holdout.active()) {
    count_split_records(info);
    if (info.num_samples == 0) {
      throw DataError("dataset " + spec.name + ": validation_fraction " +
                      config::format_double(info.holdout.fraction) + " leaves split '" + split +
                      "' without a record (" + join_list(info.files) + ")");
    }
  }
  if (!options.dir.empty()) {
    info.labels = read_labels_file((fs::path(options.dir) / "labels.txt").string());
  }
  return info;
}

}  // namespace fastnn::datasets
