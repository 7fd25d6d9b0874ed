// convert_dataset: raw data -> TF-slim-layout TFRecords + labels.txt.
#include <CLI/CLI.hpp>

#include <iostream>

#include "datasets/convert_mnist.h"
#include "datasets/mnist.h"
#include "fastnn/errors.h"

int main(int argc, char** argv) {
  using namespace fastnn;
  CLI::App app{"convert_dataset: raw data -> TF-slim TFRecords + labels.txt"};
  std::string name, input, out;
  datasets::ConvertOptions opt;
  app.add_option("--dataset_name", name, "mnist | fashion_mnist")
      ->required()
      ->check(CLI::IsMember({"mnist", "fashion_mnist"}));
  app.add_option("--input", input, "folder holding the idx(.gz) files")
      ->required();
  app.add_option("--dataset_dir", out, "output folder")->required();
  app.add_flag("--overwrite", opt.overwrite, "re-create existing outputs");
  app.add_option("--num_threads", opt.num_threads, "encoding threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--max_examples", opt.max_examples,
                 "convert only the first N examples of each split (0 = all)")
      ->check(CLI::NonNegativeNumber);
  app.set_version_flag("--version", std::string("convert_dataset ") + FASTNN_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  opt.input_dir = input;
  opt.output_dir = out;
  opt.class_names = name == "mnist" ? datasets::mnist_class_names()
                                    : datasets::fashion_mnist_class_names();
  try {
    for (const auto& s : datasets::convert_mnist(opt)) {
      if (s.skipped_existing) {
        std::cout << s.path << ": exists, kept (pass --overwrite to re-create)\n";
      } else {
        std::cout << s.path << ": " << s.examples << " examples\n";
      }
    }
  } catch (const DataError& e) {
    std::cerr << "convert_dataset: data error: " << e.what() << "\n";
    return kExitData;
  } catch (const std::exception& e) {
    std::cerr << "convert_dataset: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitOk;
}
