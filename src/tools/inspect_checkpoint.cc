// inspect_checkpoint CHECKPOINT [--model_name NAME [--num_classes N]
//                   [--use_grayscale]]
//
// Lists the names, dtypes, shapes and sizes of any checkpoint: this
// project's (model.ckpt-N), TensorFlow V2 (a prefix, its .index or .data
// file) or V1 (a file, its shards), or a directory naming one. With
// --model_name it also compares the checkpoint with that network as this
// port builds it: the variables the checkpoint lacks, those it has that the
// network does not, and those of another shape (TensorFlow's layouts
// converted first), with the checkpoint_exclude_scopes that would skip them.
// The first thing to run when fine-tuning fails.
//
// --tensor_name NAME prints that tensor's values instead (TF's tool: a TF
// checkpoint's in TF's layout), --all_tensors every tensor's after the
// listing; --printoptions takes numpy's threshold, edgeitems and precision.
//
// Exit: 0 listed (whether or not the network matches; the last line says),
// 2 bad arguments (a --tensor_name the checkpoint lacks), 3 no readable
// checkpoint there (or values that cannot be read).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fastnn/errors.h"
#include "models/model_factory.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/io/tf_checkpoint.h"
#include "src/tools/tensor_values.h"
#include "src/tools/tool_main.h"
#include "src/train/checkpoint.h"
#include "src/train/checkpoint_format.h"

namespace {
using namespace fastnn;

struct Row {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t bytes = -1;  // -1: not known without reading (V1 strings)
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

const char* own_dtype_name(train::DTypeCode c) {
  switch (c) {
    case train::DTypeCode::kFloat32:
      return "float32";
    case train::DTypeCode::kFloat64:
      return "float64";
    case train::DTypeCode::kInt64:
      return "int64";
    case train::DTypeCode::kUInt8:
      return "uint8";
    case train::DTypeCode::kInt32:
      return "int32";
    case train::DTypeCode::kBFloat16:
      return "bfloat16";
    case train::DTypeCode::kFloat16:
      return "float16";
  }
  return "?";
}

// The checkpoint's entries, its format in words, and its model variables
// by name with their shapes in this port's layout.
struct Listing {
  std::string format;
  std::vector<Row> rows;
  std::map<std::string, std::vector<int64_t>> variables;
  /// Variables whose values cannot be read (a missing or short data file,
  /// a CRC mismatch, a partitioned variable), with the reason.
  std::map<std::string, std::string> unreadable;
};

Listing list_checkpoint(const std::string& path) {
  Listing l;
  if (io::is_tf_checkpoint(path)) {
    const io::TfCheckpoint c = io::TfCheckpoint::open(path);
    l.format = c.format() == io::TfCheckpointFormat::kV2 ? "TensorFlow V2" : "TensorFlow V1";
    for (const io::TfTensorInfo& t : c.tensors()) {
      const size_t width = io::tf_dtype_bytes(t.dtype);
      const int64_t bytes = c.format() == io::TfCheckpointFormat::kV2 ? t.size
                            : width ? t.num_elements * static_cast<int64_t>(width)
                                    : -1;
      l.rows.push_back(
          {t.name,
           io::tf_dtype_name(t.dtype) +
               (t.num_slices ? " (" + std::to_string(t.num_slices) + " slices)" : std::string()),
           t.shape, bytes});
      const bool floating = t.dtype == io::kTfFloat || t.dtype == io::kTfHalf ||
                            t.dtype == io::kTfBFloat16 || t.dtype == io::kTfDouble;
      if (!floating) continue;
      l.variables[t.name] = train::port_shape_of_tf(t.name, t.shape);
      // Its bytes, read and checked as a restore reads them: "compatible"
      // means every variable loads.
      try {
        c.read(t.name);
      } catch (const DataError& e) {
        l.unreadable[t.name] = e.what();
      }
    }
    return l;
  }
  l.format = "FastNN-C++";
  io::require_regular_file(path, "a checkpoint");
  const std::string bytes = io::read_file(path);
  for (const train::CheckpointEntry& e : train::parse_checkpoint(bytes, path)) {
    l.rows.push_back(
        {e.name, own_dtype_name(e.dtype), e.dims, static_cast<int64_t>(e.data.size())});
    if (e.name.rfind("model/", 0) == 0) l.variables[e.name.substr(6)] = e.dims;
  }
  return l;
}

// A name as the terminal may show it: printable ASCII and whole UTF-8
// characters from U+00A0 up as they are, every other byte (controls, ANSI
// escapes, a newline that would forge a row, bytes of no character) as
// \xNN, and the backslash as \\.
std::string printable(const std::string& name) {
  std::string out;
  char hex[8];
  for (size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '\\') out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A whole UTF-8 character, not a C1 control (U+0080..U+009F).
    const size_t n = c < 0x80 ? 0 : config::utf8_char_bytes(name, i);
    const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(name[i + 1]) < 0xa0;
    if (n > 0 && !c1) {
      out.append(name, i, n);
      i += n;
      continue;
    }
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
    ++i;
  }
  return out;
}

// The name column is as wide as the longest name up to this; a longer name
// overflows its own row only.
constexpr size_t kMaxNameColumn = 72;

void print_listing(const std::string& path, const Listing& l) {
  size_t width = 4;
  int64_t total = 0;
  for (const Row& r : l.rows) {
    width = std::max(width, std::min(printable(r.name).size(), kMaxNameColumn));
    total += std::max<int64_t>(r.bytes, 0);
  }
  std::printf("%s checkpoint %s: %zu tensors, %lld bytes\n", l.format.c_str(),
              printable(path).c_str(), l.rows.size(), static_cast<long long>(total));
  std::printf("%-*s  %-10s  %-20s  %s\n", static_cast<int>(width), "name", "dtype", "shape",
              "bytes");
  for (const Row& r : l.rows) {
    std::printf("%-*s  %-10s  %-20s  %s\n", static_cast<int>(width), printable(r.name).c_str(),
                r.dtype.c_str(), shape_text(r.shape).c_str(),
                r.bytes < 0 ? "-" : std::to_string(r.bytes).c_str());
  }
  if (l.unreadable.empty()) return;
  std::printf("unreadable (%zu):\n", l.unreadable.size());
  for (const auto& [name, why] : l.unreadable) std::printf("  %s\n", printable(why).c_str());
}

// Compares the checkpoint's variables with the network's; prints the
// differences and a last line that says whether there are any.
void print_diff(const Listing& listing, const std::string& model_name,
                const models::ModelOptions& options) {
  auto model = models::find_model(model_name).create(options);
  std::map<std::string, std::vector<int64_t>> wanted;
  for (const auto& variable : models::model_variables(*model))
    wanted[variable.name] = variable.tensor.sizes().vec();
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> scopes;
  std::vector<std::string> unreadable;
  for (const auto& [name, shape] : wanted) {
    auto it = listing.variables.find(name);
    if (listing.unreadable.count(name)) unreadable.push_back(printable(name));
    if (it == listing.variables.end()) {
      missing.push_back(printable(name) + " " + shape_text(shape));
    } else if (it->second != shape) {
      mismatched.push_back(printable(name) + ": network " + shape_text(shape) + ", checkpoint " +
                           shape_text(it->second));
      // The scope to exclude: the network's scope and the layer's block
      // ("InceptionV3/Logits", "MobilenetV1/Logits").
      const size_t first = name.find('/');
      const size_t second = first == std::string::npos ? first : name.find('/', first + 1);
      scopes.insert(second == std::string::npos ? name : name.substr(0, second));
    }
  }
  for (const auto& [name, shape] : listing.variables) {
    if (wanted.count(name)) continue;
    // Moving averages and optimizer slots of a network variable are not
    // unexpected: "<variable>/ExponentialMovingAverage", ".../RMSProp".
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && wanted.count(name.substr(0, slash))) continue;
    unexpected.push_back(printable(name) + " " + shape_text(shape));
  }
  std::printf("\ncompared with %s (num_classes=%lld, %lld input channels): %zu variables\n",
              model_name.c_str(), static_cast<long long>(options.num_classes),
              static_cast<long long>(options.in_channels), wanted.size());
  const std::pair<const char*, const std::vector<std::string>*> groups[] = {
      {"missing from the checkpoint", &missing},
      {"in the checkpoint, not in the network", &unexpected},
      {"of another shape", &mismatched},
      {"unreadable in the checkpoint", &unreadable}};
  for (const auto& [title, names] : groups) {
    if (names->empty()) continue;
    std::printf("%s (%zu):\n", title, names->size());
    for (const auto& entry : *names) std::printf("  %s\n", entry.c_str());
  }
  if (!scopes.empty()) {
    std::string list;
    for (const auto& scope : scopes) list += (list.empty() ? "" : ",") + scope;
    std::printf("to fine-tune without them: checkpoint_exclude_scopes=%s\n", list.c_str());
  }
  if (missing.empty() && mismatched.empty() && unreadable.empty()) {
    std::printf(
        "compatible: every variable of the network is in the checkpoint, shapes equal, values "
        "readable%s\n",
        unexpected.empty() ? "" : " (some checkpoint variables are unused)");
  } else {
    std::printf("differences: %zu missing, %zu unexpected, %zu of another shape, %zu unreadable\n",
                missing.size(), unexpected.size(), mismatched.size(), unreadable.size());
  }
}

void print_all_tensors(const std::string& resolved, const Listing& listing,
                       const tools::PrintOptions& print) {
  for (const Row& r : listing.rows) {
    std::printf("\ntensor_name:  %s\n%s\n", printable(r.name).c_str(),
                tools::tensor_values(resolved, r.name, print).c_str());
  }
}

// A command-line error in the one-line form of every other failure, with
// the usage it missed; --help's exit as CLI11 gives it.
int parse_failure(CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help
  const std::string what = dynamic_cast<const CLI::RequiredError*>(&error)
                               ? std::string("no checkpoint given")
                               : std::string(error.what());
  return report_failure("inspect_checkpoint",
                        {kExitUsage, "error: ",
                         what + " (usage: inspect_checkpoint CHECKPOINT [--model_name NAME "
                                "[--num_classes N] [--use_grayscale]] [--tensor_name NAME | "
                                "--all_tensors] [--printoptions threshold=N,...])"});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "inspect_checkpoint: the tensors of a checkpoint (this project's or "
      "TensorFlow's), and its differences from a network"};
  std::string path, model_name;
  models::ModelOptions options;
  bool grayscale = false;
  app.add_option("checkpoint,--checkpoint_path", path,
                 "A checkpoint file, a TensorFlow prefix, or a directory")
      ->required();
  app.add_option("--model_name", model_name, "Compare with this network");
  app.add_option("--num_classes", options.num_classes, "The network's classes (with --model_name)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_flag("--use_grayscale", grayscale, "The network takes 1-channel images");
  std::string tensor_name, print_options;
  bool all_tensors = false;
  app.add_option("--tensor_name", tensor_name, "Print this tensor's values");
  app.add_flag("--all_tensors", all_tensors, "Print every tensor's values");
  app.add_option("--printoptions", print_options,
                 "numpy's print options for the values: threshold=N,edgeitems=N,precision=N");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return parse_failure(app, error);
  }
  options.in_channels = grayscale ? 1 : 3;
  options.dropout_keep_prob = 1.0;
  try {
    if (!model_name.empty()) models::find_model(model_name);  // a bad name before reading
    const tools::PrintOptions print = tools::parse_print_options(print_options);
    const std::string resolved = train::resolve_checkpoint(path);
    const Listing listing = list_checkpoint(resolved);
    if (!tensor_name.empty()) {
      // TF's inspect_checkpoint --tensor_name: that tensor alone.
      std::printf("tensor_name:  %s\n%s\n", printable(tensor_name).c_str(),
                  tools::tensor_values(resolved, tensor_name, print).c_str());
      return 0;
    }
    print_listing(resolved, listing);
    if (!model_name.empty()) print_diff(listing, model_name, options);
    if (all_tensors) print_all_tensors(resolved, listing, print);
    return 0;
  } catch (...) {
    return report_failure("inspect_checkpoint", train::tool_failure_of(std::current_exception()));
  }
}
