// export_tf_checkpoint: a checkpoint of ours as a TensorFlow V2 checkpoint
// that TensorFlow and TF-slim read as their own (tf.train.load_checkpoint,
// tf.compat.v1.train.Saver, TF-slim's eval_image_classifier.py).
//
//   export_tf_checkpoint --checkpoint_path=TRAIN_DIR_OR_FILE --output_prefix=DIR/model.ckpt-N
//                        [--overwrite]
//
// Writes PREFIX.data-00000-of-00001, PREFIX.index and DIR/checkpoint (the
// state file naming PREFIX), each atomically. Exit 2: bad arguments, an
// output that exists (without --overwrite), an output directory that is a
// train_dir of ours; 3: an unreadable checkpoint or a file that cannot be
// written (nothing of the export is then left half-written).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"
#include "src/io/tf_bundle_writer.h"
#include "src/tools/tool_main.h"
#include "src/train/checkpoint.h"

namespace {
using namespace fastnn;
namespace fs = std::filesystem;

// The directory the prefix's files go in.
fs::path output_dir(const fs::path& prefix) {
  return prefix.parent_path().empty() ? fs::path(".") : prefix.parent_path();
}

// Refuses an output that would replace files without --overwrite, or
// that would put a TensorFlow checkpoint among a train_dir's own (a
// trainer resuming there reads the directory's `checkpoint` file).
void check_output(const fs::path& prefix, bool overwrite) {
  if (prefix.filename().empty() || prefix.filename() == "." || prefix.filename() == "..") {
    throw ConfigError("--output_prefix: '" + prefix.string() +
                      "' names a directory; give a prefix such as DIR/model.ckpt-1000");
  }
  const fs::path dir = output_dir(prefix);
  std::error_code ec;
  if (fs::exists(dir / ".lock", ec) || !train::checkpoint_files(dir.string()).empty()) {
    throw ConfigError("--output_prefix: '" + dir.string() +
                      "' is a train_dir of this project; write the TensorFlow checkpoint to "
                      "another directory");
  }
  if (overwrite) return;
  for (const char* suffix : {".index", ".data-00000-of-00001"}) {
    const fs::path file = prefix.string() + suffix;
    if (fs::exists(fs::symlink_status(file, ec))) {
      throw ConfigError("--output_prefix: '" + file.string() +
                        "' exists (--overwrite replaces it)");
    }
  }
}

void print_report(const std::string& prefix, const std::string& source,
                  const train::TfExport& report) {
  std::printf(
      "export_tf_checkpoint: wrote %s from %s: %d variables, %d moving averages, %d optimizer "
      "slots%s\n",
      prefix.c_str(), source.c_str(), report.variables, report.moving_averages,
      report.optimizer_slots, report.global_step ? ", global_step" : "");
  if (report.left_out.empty()) return;
  std::string list;
  for (const auto& key : report.left_out) list += (list.empty() ? "" : ", ") + key;
  std::printf("export_tf_checkpoint: left out (no TensorFlow counterpart): %s\n", list.c_str());
}

int export_checkpoint(const std::string& path, const std::string& output, bool overwrite) {
  const fs::path prefix(output);
  check_output(prefix, overwrite);
  const std::string source = train::resolve_checkpoint(path);
  const train::TensorMap tensors = train::load_tensors(source);
  const fs::path dir = output_dir(prefix);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError("cannot create '" + dir.string() + "': " + ec.message());
  const train::TfExport report = train::save_tf_checkpoint(prefix.string(), tensors);
  io::write_file_atomic(
      (dir / "checkpoint").string(),
      io::tf_checkpoint_state_text(prefix.filename().string(), {prefix.filename().string()}));
  print_report(prefix.string(), source, report);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "export_tf_checkpoint: a checkpoint (this project's or TensorFlow's) as a TensorFlow V2 "
      "checkpoint under TF-slim's names and layouts"};
  std::string path, output;
  bool overwrite = false;
  app.add_option("--checkpoint_path", path, "A checkpoint file or a train_dir (its newest)")
      ->required();
  app.add_option("--output_prefix", output, "The V2 prefix to write, e.g. DIR/model.ckpt-1000")
      ->required();
  app.add_flag("--overwrite", overwrite, "Replace an existing checkpoint of that prefix");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help
    return report_failure("export_tf_checkpoint",
                          {kExitUsage, "error: ",
                           std::string(error.what()) +
                               " (usage: export_tf_checkpoint --checkpoint_path=TRAIN_DIR_OR_FILE "
                               "--output_prefix=PREFIX [--overwrite])"});
  }
  try {
    return export_checkpoint(path, output, overwrite);
  } catch (...) {
    return report_failure("export_tf_checkpoint", train::tool_failure_of(std::current_exception()));
  }
}
