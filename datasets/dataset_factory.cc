#include "datasets/dataset_factory.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "datasets/mnist.h"
#include "fastnn/errors.h"
#include "fastnn/hparams.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

const std::vector<DatasetSpec>& table() {
  static const std::vector<DatasetSpec> kTable = {
      // FastNN's mock: synthetic images at the model's size, no I/O.
      {"mock", "", {{"train", 1000000}, {"validation", 10000}, {"test", 10000}},
       1000, 3, true},
      mnist_spec(),
      fashion_mnist_spec(),
  };
  return kTable;
}

}  // namespace

std::vector<std::string> dataset_names() {
  std::vector<std::string> out;
  for (const auto& d : table()) out.push_back(d.name);
  return out;
}

const DatasetSpec& find_dataset(const std::string& name) {
  for (const auto& d : table()) {
    if (d.name == name) return d;
  }
  throw ConfigError("dataset_name: '" + name +
                    "' is not an available dataset; available: " +
                    join_list(dataset_names()));
}

std::vector<std::string> read_labels_file(const std::string& path) {
  std::vector<std::string> labels;
  std::ifstream in(path);
  if (!in) return labels;
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const int64_t id = std::stoll(line.substr(0, colon));
    if (id < 0 || id > 1000000) continue;
    if (labels.size() <= static_cast<size_t>(id)) labels.resize(id + 1);
    labels[id] = line.substr(colon + 1);
  }
  return labels;
}

std::vector<std::string> expand_file_list(const std::string& list,
                                          const std::string& dir) {
  std::vector<std::string> files;
  for (std::string item : split_list(list)) {
    if (!dir.empty() && fs::path(item).is_relative()) {
      item = (fs::path(dir) / item).string();
    }
    glob_t g{};
    int rc = glob(item.c_str(), 0, nullptr, &g);
    if (rc != 0) {
      globfree(&g);
      throw DataError("no file matches '" + item + "'");
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

DatasetInfo get_dataset(const HParams& hp, const std::string& split) {
  const DatasetSpec& spec = find_dataset(hp.dataset_name);
  DatasetInfo info;
  info.name = spec.name;
  info.split = split;
  info.num_classes = spec.num_classes;
  info.channels = spec.channels;
  info.synthetic = spec.synthetic;
  bool known_split = false;
  std::vector<std::string> split_names;
  for (const auto& [name, n] : spec.splits) {
    split_names.push_back(name);
    if (name == split) {
      info.num_samples = n;
      known_split = true;
    }
  }
  if (!known_split) {
    throw ConfigError("dataset_split_name: '" + split + "' is not a split of " +
                      spec.name + "; valid: " + join_list(split_names));
  }
  if (spec.synthetic) return info;
  const std::string& files_override = split == hp.dataset_split_name ? hp.train_files
                                     : split == hp.eval_split_name  ? hp.eval_files
                                                                    : std::string();
  if (hp.dataset_dir.empty() && files_override.empty()) {
    throw ConfigError(hp.where("dataset_dir") + ": dataset_dir: not set (the "
                      "folder holding " + spec.file_prefix + "_" + split +
                      ".tfrecord)");
  }
  if (!files_override.empty()) {
    info.files = expand_file_list(files_override, hp.dataset_dir);
  } else {
    const std::string shard = "_[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]";
    const std::string pattern = spec.file_prefix + "_" + split + ".tfrecord or " +
                                spec.file_prefix + "_" + split + "_NNNNN-of-NNNNN.tfrecord";
    std::vector<std::string> found;
    for (const std::string& p : {std::string(".tfrecord"), shard + ".tfrecord"}) {
      try {
        auto f = expand_file_list(spec.file_prefix + "_" + split + p,
                                  hp.dataset_dir);
        found.insert(found.end(), f.begin(), f.end());
      } catch (const DataError&) {
      }
    }
    if (found.empty()) {
      throw DataError("dataset " + spec.name + ": no file for split '" + split +
                      "' in '" + hp.dataset_dir + "' (looked for " + pattern +
                      "); run convert_dataset first");
    }
    std::sort(found.begin(), found.end());
    info.files = found;
  }
  if (!hp.dataset_dir.empty()) {
    info.labels = read_labels_file((fs::path(hp.dataset_dir) / "labels.txt").string());
  }
  return info;
}

}  // namespace fastnn::datasets
