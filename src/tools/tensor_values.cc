#include "src/tools/tensor_values.h"

#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/io/tf_checkpoint.h"
#include "src/train/checkpoint.h"

namespace fastnn::tools {
namespace {

// TensorFlow's stored values as a tensor of the same type and shape.
torch::Tensor tf_values(const io::TfCheckpoint& ckpt, const std::string& name) {
  const io::TfTensor t = ckpt.read(name);
  if (auto v = train::torch_tensor_of(t)) return *v;
  throw DataError("tensor '" + name + "' is " + io::tf_dtype_name(t.dtype) +
                  ", whose values this tool does not print");
}

void print_scalar(const torch::Tensor& v, int precision, std::ostream& os) {
  if (v.is_floating_point()) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*g", precision, v.item<double>());
    os << text;
  } else if (v.scalar_type() == torch::kBool) {
    os << (v.item<bool>() ? "True" : "False");
  } else {
    os << v.item<int64_t>();
  }
}

// numpy's nested layout: one bracket per dimension, the innermost on one
// line; a summarised dimension shows its first and last `edgeitems`
// entries around "...".
void print_nested(const torch::Tensor& v, const PrintOptions& o, bool summarise, int depth,
                  std::ostream& os) {
  if (v.dim() == 0) {
    print_scalar(v, o.precision, os);
    return;
  }
  const int64_t n = v.size(0);
  const bool cut = summarise && n > 2 * o.edgeitems;
  const std::string gap = v.dim() == 1 ? " " : "\n" + std::string(depth + 1, ' ');
  std::vector<int64_t> shown;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == o.edgeitems) {
      shown.push_back(-1);
      i = n - o.edgeitems - 1;
      continue;
    }
    shown.push_back(i);
  }
  os << "[";
  for (size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) os << gap;
    if (shown[k] < 0) {
      os << "...";
    } else {
      print_nested(v[shown[k]], o, summarise, depth + 1, os);
    }
  }
  os << "]";
}

}  // namespace

PrintOptions parse_print_options(const std::string& text) {
  PrintOptions o;
  for (const std::string& item : split_list(text)) {
    const size_t eq = item.find('=');
    int64_t value = -1;
    const std::string key = eq == std::string::npos ? item : item.substr(0, eq);
    const bool number = eq != std::string::npos &&
                        config::parse_int(item.substr(eq + 1), &value) == config::NumberStatus::kOk;
    if (!number || value < 0 || (key == "precision" && value > 30)) {
      throw ConfigError(
          "--printoptions: " + config::quote_value(item) +
          " is not threshold=N, edgeitems=N or precision=N (N >= 0; precision <= 30)");
    }
    if (key == "threshold") {
      o.threshold = value;
    } else if (key == "edgeitems") {
      o.edgeitems = value;
    } else if (key == "precision") {
      o.precision = static_cast<int>(value);
    } else {
      throw ConfigError("--printoptions: " + config::quote_value(key) +
                        " is not threshold, edgeitems or precision");
    }
  }
  return o;
}

std::string tensor_values(const std::string& path, const std::string& name,
                          const PrintOptions& options) {
  torch::Tensor v;
  if (io::is_tf_checkpoint(path)) {
    const io::TfCheckpoint ckpt = io::TfCheckpoint::open(path);
    if (!ckpt.find(name)) {
      throw ConfigError("--tensor_name: " + config::quote_value(name) + " is not a tensor of '" +
                        path + "'");
    }
    v = tf_values(ckpt, name);
  } else {
    const train::TensorMap all = train::load_tensors(path);
    const auto it = all.find(name);
    if (it == all.end()) {
      throw ConfigError("--tensor_name: " + config::quote_value(name) + " is not a tensor of '" +
                        path + "'");
    }
    v = it->second;
  }
  std::ostringstream os;
  print_nested(v, options, v.numel() > options.threshold, 0, os);
  return os.str();
}

}  // namespace fastnn::tools
