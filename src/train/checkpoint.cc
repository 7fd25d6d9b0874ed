#include "src/train/checkpoint.h"

#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"
#include "fastnn/errors.h"

namespace fastnn::train {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[] = "FNNCKPT1";

const std::vector<std::pair<torch::ScalarType, uint8_t>>& dtype_codes() {
  static const std::vector<std::pair<torch::ScalarType, uint8_t>> kCodes = {
      {torch::kFloat32, 0}, {torch::kFloat64, 1}, {torch::kInt64, 2},
      {torch::kUInt8, 3},   {torch::kInt32, 4},   {torch::kBFloat16, 5},
      {torch::kFloat16, 6}};
  return kCodes;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Cursor {
 public:
  Cursor(const std::string& bytes, const std::string& path)
      : bytes_(bytes), path_(path) {}
  template <typename T>
  T get() {
    T v;
    need(sizeof(T));
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* take(size_t n) {
    need(n);
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

 private:
  void need(size_t n) {
    if (pos_ + n > bytes_.size() - 4) {
      throw DataError("checkpoint '" + path_ + "' is truncated");
    }
  }
  const std::string& bytes_;
  const std::string& path_;
  size_t pos_ = 8;
};

}  // namespace

void save_tensors(const std::string& path, const TensorMap& tensors) {
  std::string out(kMagic, 8);
  put<uint32_t>(out, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().cpu().contiguous();
    uint8_t code = 255;
    for (const auto& [type, k] : dtype_codes()) {
      if (type == c.scalar_type()) code = k;
    }
    TORCH_CHECK(code != 255, "checkpoint: unsupported dtype for ", name);
    put<uint32_t>(out, static_cast<uint32_t>(name.size()));
    out += name;
    put<uint8_t>(out, code);
    put<uint8_t>(out, static_cast<uint8_t>(c.dim()));
    for (int64_t d : c.sizes()) put<int64_t>(out, d);
    const uint64_t nbytes = c.numel() * c.element_size();
    put<uint64_t>(out, nbytes);
    out.append(static_cast<const char*>(c.data_ptr()), nbytes);
  }
  put<uint32_t>(out, io::crc32c(out.data(), out.size()));
  io::write_file_atomic(path, out);
}

TensorMap load_tensors(const std::string& path) {
  const std::string bytes = io::read_file(path);
  if (bytes.size() < 16 || bytes.compare(0, 8, kMagic) != 0) {
    throw DataError("'" + path + "' is not a FastNN-C++ checkpoint");
  }
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  if (stored != io::crc32c(bytes.data(), bytes.size() - 4)) {
    throw DataError("checkpoint '" + path + "' is corrupt (CRC mismatch)");
  }
  Cursor cur(bytes, path);
  TensorMap out;
  const uint32_t count = cur.get<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t len = cur.get<uint32_t>();
    std::string name(cur.take(len), len);
    const uint8_t code = cur.get<uint8_t>();
    const uint8_t ndim = cur.get<uint8_t>();
    std::vector<int64_t> dims(ndim);
    for (auto& d : dims) d = cur.get<int64_t>();
    const uint64_t nbytes = cur.get<uint64_t>();
    torch::ScalarType type = torch::kFloat32;
    bool known = false;
    for (const auto& [t, k] : dtype_codes()) {
      if (k == code) {
        type = t;
        known = true;
      }
    }
    if (!known) throw DataError("checkpoint '" + path + "': unknown dtype");
    auto t = torch::empty(dims, torch::TensorOptions().dtype(type));
    if (nbytes != static_cast<uint64_t>(t.numel() * t.element_size())) {
      throw DataError("checkpoint '" + path + "': size mismatch for " + name);
    }
    std::memcpy(t.data_ptr(), cur.take(nbytes), nbytes);
    out.emplace(std::move(name), std::move(t));
  }
  return out;
}

CheckpointManager::CheckpointManager(std::string dir, int64_t max_to_keep)
    : dir_(std::move(dir)), max_to_keep_(max_to_keep) {
  fs::create_directories(dir_);
  std::ifstream in(fs::path(dir_) / "checkpoint");
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "all_model_checkpoint_paths: \"";
    if (line.rfind(key, 0) == 0 && line.size() > key.size()) {
      kept_.push_back(line.substr(key.size(), line.size() - key.size() - 1));
    }
  }
}

std::optional<std::string> CheckpointManager::latest() const {
  std::ifstream in(fs::path(dir_) / "checkpoint");
  std::string line;
  const std::string key = "model_checkpoint_path: \"";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0 && line.size() > key.size()) {
      const std::string name = line.substr(key.size(), line.size() - key.size() - 1);
      const fs::path p = fs::path(name).is_absolute() ? fs::path(name)
                                                      : fs::path(dir_) / name;
      if (fs::exists(p)) return p.string();
    }
  }
  return std::nullopt;
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
  std::ostringstream index;
  index << "model_checkpoint_path: \"" << name << "\"\n";
  for (const auto& k : kept_) {
    index << "all_model_checkpoint_paths: \"" << k << "\"\n";
  }
  io::write_file_atomic((fs::path(dir_) / "checkpoint").string(), index.str());
  return path;
}

std::string resolve_checkpoint(const std::string& path) {
  if (path.empty()) throw ConfigError("checkpoint_path: not set");
  if (fs::is_directory(path)) {
    CheckpointManager m(path, 5);
    auto latest = m.latest();
    if (!latest) {
      throw DataError("no checkpoint in '" + path + "' (no 'checkpoint' index)");
    }
    return *latest;
  }
  if (!fs::exists(path)) throw DataError("checkpoint '" + path + "' does not exist");
  return path;
}

}  // namespace fastnn::train
