#include "src/train/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/io/dir_lock.h"
#include "src/io/tf_bundle_writer.h"
#include "src/io/tf_checkpoint.h"
#include "src/log/log.h"
#include "src/train/checkpoint_format.h"

namespace fastnn::train {
namespace fs = std::filesystem;
namespace {

const std::vector<std::pair<torch::ScalarType, DTypeCode>>& dtype_codes() {
  static const std::vector<std::pair<torch::ScalarType, DTypeCode>> kCodes = {
      {torch::kFloat32, DTypeCode::kFloat32}, {torch::kFloat64, DTypeCode::kFloat64},
      {torch::kInt64, DTypeCode::kInt64},     {torch::kUInt8, DTypeCode::kUInt8},
      {torch::kInt32, DTypeCode::kInt32},     {torch::kBFloat16, DTypeCode::kBFloat16},
      {torch::kFloat16, DTypeCode::kFloat16}};
  return kCodes;
}

// TensorFlow's types that LibTorch holds, both ways.
const std::vector<std::pair<int, torch::ScalarType>>& tf_types() {
  static const std::vector<std::pair<int, torch::ScalarType>> kTypes = {
      {io::kTfFloat, torch::kFloat32},
      {io::kTfDouble, torch::kFloat64},
      {io::kTfHalf, torch::kFloat16},
      {io::kTfBFloat16, torch::kBFloat16},
      {io::kTfInt32, torch::kInt32},
      {io::kTfInt64, torch::kInt64},
      {io::kTfInt16, torch::kInt16},
      {io::kTfInt8, torch::kInt8},
      {io::kTfUInt8, torch::kUInt8},
      {io::kTfBool, torch::kBool},
      {io::kTfComplex64, torch::kComplexFloat},
      {io::kTfComplex128, torch::kComplexDouble}};
  return kTypes;
}

// LibTorch's type for a TF type it holds.
std::optional<torch::ScalarType> torch_type_of(int tf_dtype) {
  for (const auto& [tf, torch_type] : tf_types()) {
    if (tf == tf_dtype) return torch_type;
  }
  return std::nullopt;
}

// TensorFlow's type of a LibTorch tensor's type.
std::optional<int> tf_dtype_of(torch::ScalarType type) {
  for (const auto& [tf, torch_type] : tf_types()) {
    if (torch_type == type) return tf;
  }
  return std::nullopt;
}

// TF-slim's depthwise kernels, their moving averages and slots included:
// ".../depthwise_weights" or ".../depthwise_weights/<slot>".
bool is_depthwise_kernel(const std::string& tf_name) {
  const size_t at = tf_name.find("/depthwise_weights");
  return at != std::string::npos && (at + 18 == tf_name.size() || tf_name[at + 18] == '/');
}

// A TensorFlow checkpoint's variables under this port's keys and layouts:
// "model/<name>" (moving averages and optimizer slots keep their suffix,
// so "model/<name>/ExponentialMovingAverage" is the EMA key), float32;
// conv kernels HWIO -> OIHW, depthwise [kh,kw,C,M] -> [C*M,1,kh,kw],
// fully-connected [in,out] -> [out,in]. TF's scalar global_step (int64 or
// int32) is "global_step", int64, as in ours. Integer, bool and complex
// entries keep their type and TF's shape under "model/<name>" (restore_model
// then says "present but int32", not "missing"); string and unsigned
// 16-64-bit ones (TF2's object graph) are left out.
TensorMap load_tf_tensors(const std::string& path) {
  const io::TfCheckpoint ckpt = io::TfCheckpoint::open(path);
  TensorMap out;
  for (const io::TfTensorInfo& info : ckpt.tensors()) {
    const int d = info.dtype;
    if (!torch_type_of(d)) continue;
    torch::Tensor v = *torch_tensor_of(ckpt.read(info.name));
    if (info.name == "global_step" && info.shape.empty() &&
        (d == io::kTfInt64 || d == io::kTfInt32)) {
      out.emplace("global_step", v.to(torch::kInt64));
      continue;
    }
    if (!v.is_floating_point()) {
      out.emplace("model/" + info.name, v);
      continue;
    }
    v = v.to(torch::kFloat32);
    if (v.dim() == 4 && is_depthwise_kernel(info.name)) {
      v = v.permute({2, 3, 0, 1}).reshape({v.size(2) * v.size(3), 1, v.size(0), v.size(1)});
    } else if (v.dim() == 4) {
      v = v.permute({3, 2, 0, 1});
    } else if (v.dim() == 2) {
      v = v.t();
    }
    out.emplace("model/" + info.name, v.contiguous());
  }
  return out;
}

// A tensor of ours in TensorFlow's layout (load_tf_tensors' conversions
// undone) and bytes.
io::TfTensor tf_tensor_of(const std::string& tf_name, const torch::Tensor& t) {
  torch::Tensor v = t.detach().cpu();
  if (v.is_floating_point() && v.dim() == 4 && is_depthwise_kernel(tf_name)) {
    v = v.permute({2, 3, 0, 1});  // [C*1, 1, kh, kw] -> [kh, kw, C, 1]
  } else if (v.is_floating_point() && v.dim() == 4) {
    v = v.permute({2, 3, 1, 0});
  } else if (v.is_floating_point() && v.dim() == 2) {
    v = v.t();
  }
  v = v.contiguous();
  io::TfTensor out;
  out.dtype = *tf_dtype_of(v.scalar_type());
  out.shape = v.sizes().vec();
  out.bytes.assign(static_cast<const char*>(v.data_ptr()), v.numel() * v.element_size());
  return out;
}

bool is_own_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, "FNNCKPT1", 8) == 0;
}

}  // namespace

std::optional<torch::Tensor> torch_tensor_of(const io::TfTensor& t) {
  const auto type = torch_type_of(t.dtype);
  if (!type) return std::nullopt;
  torch::Tensor v = torch::empty(t.shape, torch::TensorOptions().dtype(*type));
  if (!t.bytes.empty()) std::memcpy(v.data_ptr(), t.bytes.data(), t.bytes.size());
  return v;
}

std::vector<int64_t> port_shape_of_tf(const std::string& tf_name, const std::vector<int64_t>& s) {
  if (s.size() == 4 && is_depthwise_kernel(tf_name)) return {s[2] * s[3], 1, s[0], s[1]};
  if (s.size() == 4) return {s[3], s[2], s[0], s[1]};
  if (s.size() == 2) return {s[1], s[0]};
  return s;
}

TfExport save_tf_checkpoint(const std::string& prefix, const TensorMap& tensors) {
  TfExport report;
  std::map<std::string, io::TfTensor> out;
  for (const auto& [key, t] : tensors) {
    std::string name;
    if (key == "global_step") {
      name = key;
      report.global_step = true;
    } else if (key.rfind("model/", 0) == 0) {
      name = key.substr(6);
      const std::string suffix = "/ExponentialMovingAverage";
      const bool shadow = name.size() > suffix.size() &&
                          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      ++(shadow ? report.moving_averages : report.variables);
    } else if (key.rfind("optimizer/", 0) == 0) {
      name = key.substr(10);
      ++report.optimizer_slots;
    }
    if (name.empty() || !tf_dtype_of(t.scalar_type())) {
      report.left_out.push_back(key);
      continue;
    }
    if (out.count(name)) throw DataError("checkpoint: two tensors would be named '" + name + "'");
    out.emplace(name, tf_tensor_of(name, t));
  }
  io::write_tf_bundle(prefix, out);
  return report;
}

void save_tensors(const std::string& path, const TensorMap& tensors) {
  std::string out = checkpoint_header(static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().cpu().contiguous();
    const auto known = std::find_if(dtype_codes().begin(), dtype_codes().end(),
                                    [&](const auto& e) { return e.first == c.scalar_type(); });
    TORCH_CHECK(known != dtype_codes().end(), "checkpoint: unsupported dtype for ", name);
    append_checkpoint_entry(
        &out, name, known->second, c.sizes().vec(),
        std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()));
  }
  append_checkpoint_crc(&out);
  io::write_file_atomic(path, out);
}

TensorMap load_tensors(const std::string& path) {
  // Told apart by their bytes: ours start with "FNNCKPT1", TensorFlow's
  // (a V1 file, a V2 prefix's .index) end with a LevelDB table footer.
  if (!is_own_checkpoint(path) && (io::is_tf_checkpoint(path) || fs::is_directory(path))) {
    return load_tf_tensors(path);
  }
  io::require_regular_file(path, "a checkpoint");
  const std::string bytes = io::read_file(path);
  TensorMap out;
  for (const CheckpointEntry& e : parse_checkpoint(bytes, path)) {
    const auto known = std::find_if(dtype_codes().begin(), dtype_codes().end(),
                                    [&](const auto& c) { return c.second == e.dtype; });
    auto t = torch::empty(e.dims, torch::TensorOptions().dtype(known->first));
    // An empty tensor has no storage: memcpy to its null pointer is UB even
    // for 0 bytes (UBSan, scripts/sanitize.sh asan).
    if (!e.data.empty()) std::memcpy(t.data_ptr(), e.data.data(), e.data.size());
    out.emplace(e.name, std::move(t));
  }
  return out;
}

std::vector<std::string> checkpoint_files(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  const std::regex name_re("model\\.ckpt-(\\d{1,18})");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, name_re) && entry.is_regular_file(ec)) {
      found.emplace_back(std::stoll(m[1]), entry.path().string());
    }
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

std::optional<LatestCheckpoint> find_latest_checkpoint(const std::string& dir) {
  const std::vector<std::string> found = checkpoint_files(dir);
  if (found.empty()) return std::nullopt;
  std::string indexed;
  if (std::error_code ec; fs::is_regular_file(fs::path(dir) / "checkpoint", ec)) {
    const auto named =
        io::checkpoint_state_path(io::read_file((fs::path(dir) / "checkpoint").string(), 1 << 20));
    if (named) indexed = fs::path(*named).filename().string();
  }
  std::string problems;
  for (const auto& path : found) {
    try {
      LatestCheckpoint latest{path, load_tensors(path)};
      const std::string name = fs::path(path).filename().string();
      if (!problems.empty() || indexed != name) {
        log::warning() << "resuming from " << path << ", the newest readable checkpoint"
                       << (indexed.empty() ? " (the 'checkpoint' index is missing or unreadable)"
                           : indexed == name
                               ? ""
                               : " (the 'checkpoint' index names '" + indexed.substr(0, 100) + "')")
                       << problems;
      }
      return latest;
    } catch (const DataError& e) {
      problems += "; passed over: " + std::string(e.what());
    }
  }
  throw DataError("'" + dir + "' holds " + std::to_string(found.size()) +
                  " checkpoint file(s) but none is readable" + problems +
                  ". Starting over would overwrite them: move them away or choose another "
                  "train_dir");
}

CheckpointManager::CheckpointManager(std::string dir, int64_t max_to_keep)
    : dir_(std::move(dir)), max_to_keep_(max_to_keep) {
  lock_fd_ = io::lock_directory(dir_, "train_dir", "training process");
  const auto removed = io::remove_stale_temporaries(dir_);
  if (!removed.empty()) {
    log::info() << "train_dir: removed " << removed.size()
                << " temporary file(s) of processes that no longer run (e.g. " << removed.front()
                << ")";
  }
  // The files on disk, oldest first, not only those the index lists: a
  // process killed between writing a checkpoint and rewriting the index
  // leaves a file the index never named, which must still be pruned.
  const std::vector<std::string> on_disk = checkpoint_files(dir_);
  for (auto it = on_disk.rbegin(); it != on_disk.rend(); ++it) {
    kept_.push_back(fs::path(*it).filename().string());
  }
}

CheckpointManager::~CheckpointManager() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::optional<LatestCheckpoint> CheckpointManager::latest() const {
  return find_latest_checkpoint(dir_);
}

std::string CheckpointManager::save(int64_t step, const TensorMap& tensors) {
  const std::string name = "model.ckpt-" + std::to_string(step);
  const std::string path = (fs::path(dir_) / name).string();
  save_tensors(path, tensors);
  kept_.erase(std::remove(kept_.begin(), kept_.end(), name), kept_.end());
  kept_.push_back(name);
  while (max_to_keep_ > 0 && static_cast<int64_t>(kept_.size()) > max_to_keep_) {
    std::error_code ec;
    fs::remove(fs::path(dir_) / kept_.front(), ec);
    kept_.erase(kept_.begin());
  }
  io::write_file_atomic((fs::path(dir_) / "checkpoint").string(),
                        io::tf_checkpoint_state_text(name, kept_));
  return path;
}

std::string resolve_checkpoint(const std::string& path) {
  if (path.empty()) throw ConfigError("checkpoint_path: not set");
  if (fs::is_directory(path)) {
    auto latest = find_latest_checkpoint(path);
    if (latest) return latest->path;
    // A TensorFlow checkpoint directory: its "checkpoint" file names one.
    if (fs::exists(fs::path(path) / "checkpoint")) return io::TfCheckpoint::open(path).path();
    throw DataError("no checkpoint in '" + path +
                    "' (no model.ckpt-* file, no TensorFlow 'checkpoint' file)");
  }
  // TensorFlow's names: a V2 prefix (PREFIX.index beside it), a V1 shard
  // pattern, the .index or a .data file.
  if (!fs::exists(path) || !is_own_checkpoint(path)) {
    try {
      return io::TfCheckpoint::open(path).path();
    } catch (const DataError& e) {
      if (!fs::exists(path)) {
        throw DataError("checkpoint '" + path + "' does not exist (" + e.what() + ")");
      }
    }
  }
  return path;
}

}  // namespace fastnn::train
