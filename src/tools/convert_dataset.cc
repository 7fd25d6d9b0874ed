// convert_dataset: raw data -> TF-slim-layout TFRecords + labels.txt.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <thread>

#include "datasets/convert_cifar10.h"
#include "datasets/convert_image_folder.h"
#include "datasets/convert_mnist.h"
#include "datasets/mnist.h"
#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/log/failure.h"

namespace {
using namespace fastnn;

void add_options(CLI::App& app, std::string& name, std::string& input, std::string& out,
                 datasets::ConvertOptions& opt, bool& quiet) {
  app.add_option("--dataset_name", name,
                 "mnist | fashion_mnist (idx files) | cifar10 (binary "
                 "batches) | image_folder (<class>/<image> folders)")
      ->required()
      ->check(CLI::IsMember({"mnist", "fashion_mnist", "cifar10", "image_folder"}));
  app.add_option("--input", input, "folder holding the raw data")->required();
  app.add_option("--dataset_dir", out, "output folder")->required();
  app.add_flag("--overwrite", opt.overwrite,
               "replace existing outputs (otherwise they are an error, exit 2)");
  app.add_option("--num_threads", opt.num_threads, "encoding threads (default: the cores)")
      ->check(CLI::Range(1, 256));
  app.add_option("--num_shards", opt.num_shards,
                 "files per split, equal sizes +-1 (default: 1; image_folder: 5)")
      ->check(CLI::Range(1, 99999));
  app.add_option("--output_prefix", opt.prefix,
                 "file name prefix, no '/' (default: mnist for both MNISTs, "
                 "cifar10, image_folder; use flowers for the flowers dataset)");
  app.add_option("--max_examples", opt.max_examples,
                 "convert only the first N examples of each split (0 = all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--validation_fraction", opt.validation_fraction,
                 "image_folder: share of images in split 'validation'")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999999));
  app.add_option("--validation_split_seed", opt.validation_split_seed,
                 "image_folder: seed of the train/validation split")
      ->capture_default_str();
  app.add_flag("--quiet", quiet, "no progress output");
  app.set_version_flag("--version", std::string("convert_dataset ") + FASTNN_VERSION);
}

// Checks the folders, clears an interrupted run's temporaries and converts.
std::vector<datasets::ConvertedSplit> convert(const std::string& name,
                                              datasets::ConvertOptions& opt) {
  datasets::check_folder_flag("--input", opt.input_dir);
  datasets::check_folder_flag("--dataset_dir", opt.output_dir);
  if (!opt.prefix.empty()) datasets::check_prefix_flag(opt.prefix);
  // Temporaries of a run that was killed (SIGTERM, SIGKILL) before it
  // renamed them; a running converter's are kept.
  const auto removed = io::remove_stale_temporaries(opt.output_dir);
  if (!removed.empty()) {
    std::cerr << "convert_dataset: removed " << removed.size()
              << " stale temporary file(s) of an interrupted run from "
              << config::quote_value(opt.output_dir) << "\n";
  }
  if (name == "cifar10") return datasets::convert_cifar10(opt);
  if (name == "image_folder") return datasets::convert_image_folder(opt);
  opt.class_names =
      name == "mnist" ? datasets::mnist_class_names() : datasets::fashion_mnist_class_names();
  return datasets::convert_mnist(opt);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"convert_dataset: raw data -> TF-slim TFRecords + labels.txt"};
  std::string name, input, out;
  datasets::ConvertOptions opt;
  opt.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opt.num_shards = 0;
  bool quiet = false;
  add_options(app, name, input, out, opt, quiet);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  // Past a file size limit (ulimit -f) a write fails with EFBIG, named
  // with its file, instead of SIGXFSZ ending the process without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  opt.input_dir = input;
  opt.output_dir = out;
  opt.progress = !quiet;
  if (opt.num_shards == 0) opt.num_shards = name == "image_folder" ? 5 : 1;
  try {
    for (const auto& split : convert(name, opt)) {
      std::cout << split.split << ": " << split.examples << " examples in " << split.paths.size()
                << " file(s): " << split.paths.front() << (split.paths.size() > 1 ? " ..." : "")
                << "\n";
    }
  } catch (...) {
    return report_failure("convert_dataset", failure_of(std::current_exception()));
  }
  return kExitOk;
}
