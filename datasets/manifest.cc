#include "datasets/manifest.h"

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"

namespace fastnn::datasets {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMagic = "fastnn dataset manifest 1";
constexpr const char* kSuffix = ".manifest";
// 100,000 shards of long names fit many times over.
constexpr uintmax_t kMaxBytes = uintmax_t{64} << 20;

std::string interrupted(const std::string& path) {
  return "'" + path +
         "': a conversion into this folder was interrupted while it replaced "
         "the files, so they may mix two conversions; run convert_dataset "
         "with --overwrite again";
}

// The split's files of a complete manifest; throws when one is missing or
// changed.
std::vector<std::string> checked_files(const std::string& path, const Manifest& m,
                                       const std::string& split) {
  std::vector<std::string> out;
  const fs::path dir = fs::path(path).parent_path();
  for (const auto& f : m.files) {
    if (f.split != split) continue;
    const std::string file = (dir / f.name).string();
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    if (ec || size != f.bytes) {
      throw DataError(
          "'" + file + "' " +
          (ec ? "is missing (" + ec.message() + ")" : "has " + std::to_string(size) + " bytes") +
          ", but '" + path + "' lists it with " + std::to_string(f.bytes) +
          " bytes: the folder was changed after convert_dataset wrote "
          "it; run convert_dataset with --overwrite again (or remove the "
          "manifest if the files were replaced on purpose)");
    }
    out.push_back(file);
  }
  return out;
}

}  // namespace

std::string manifest_path(const std::string& dir, const std::string& prefix) {
  return (fs::path(dir) / (prefix + kSuffix)).string();
}

std::optional<Manifest> read_manifest(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return DataError("'" + path + "': not a convert_dataset manifest: " + why);
  };
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::nullopt;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::is_regular_file(st)) {
    throw bad(ec ? ec.message() : std::string("not a regular file"));
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxBytes) {
    throw bad(ec ? ec.message() : "over " + std::to_string(kMaxBytes) + " bytes");
  }
  std::istringstream in(io::read_file(path));
  std::string line;
  if (!std::getline(in, line) || line != kMagic) throw bad("no '" + std::string(kMagic) + "' line");
  Manifest manifest;
  if (!std::getline(in, line) || (line != "state complete" && line != "state converting")) {
    throw bad("no 'state complete' or 'state converting' line");
  }
  manifest.complete = line == "state complete";
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string word;
    ManifestFile file;
    if (!(fields >> word >> file.split >> file.records >> file.bytes) || word != "file" ||
        !(fields.get() == ' ') || !std::getline(fields, file.name) || file.name.empty() ||
        file.name.find('/') != std::string::npos) {
      throw bad("bad line '" + line.substr(0, 100) + "'");
    }
    manifest.files.push_back(std::move(file));
  }
  return manifest;
}

void write_manifest(const std::string& path, const Manifest& m) {
  std::string text =
      std::string(kMagic) + "\nstate " + (m.complete ? "complete" : "converting") + "\n";
  for (const auto& f : m.files) {
    text += "file " + f.split + " " + std::to_string(f.records) + " " + std::to_string(f.bytes) +
            " " + f.name + "\n";
  }
  io::write_file_atomic(path, text);
}

std::vector<std::string> manifest_split_files(const std::string& path, const Manifest& m,
                                              const std::string& split) {
  if (!m.complete) throw DataError(interrupted(path));
  auto files = checked_files(path, m, split);
  if (files.empty()) {
    std::set<std::string> splits;
    for (const auto& f : m.files) splits.insert(f.split);
    std::string listed;
    for (const auto& s : splits) listed += (listed.empty() ? "" : ", ") + s;
    throw DataError("'" + path + "' lists no file of split '" + split + "' (it lists " +
                    (listed.empty() ? "none" : listed) +
                    "): the last conversion into this folder did not write that split");
  }
  return files;
}

void check_files_against_manifests(const std::vector<std::string>& files) {
  std::map<std::string, std::vector<std::pair<std::string, Manifest>>> by_dir;
  for (const auto& file : files) {
    const fs::path p(file);
    const std::string dir = p.parent_path().string();
    auto [it, fresh] = by_dir.try_emplace(dir);
    std::error_code ec;
    for (fs::directory_iterator d(dir.empty() ? "." : dir, ec), end; fresh && !ec && d != end;
         d.increment(ec)) {
      const std::string path = d->path().string();
      if (d->path().extension() != kSuffix) continue;
      try {
        if (auto m = read_manifest(path)) it->second.emplace_back(path, *m);
      } catch (const DataError&) {
        // Not a manifest of convert_dataset's: another tool's file.
      }
    }
    const std::string name = p.filename().string();
    for (const auto& [path, m] : it->second) {
      const std::string stem = fs::path(path).filename().string();
      const std::string prefix = stem.substr(0, stem.size() - std::string(kSuffix).size());
      if (!m.complete && name.rfind(prefix + "_", 0) == 0) throw DataError(interrupted(path));
      for (const auto& f : m.files) {
        if (f.name == name) checked_files(path, Manifest{true, {f}}, f.split);
      }
    }
  }
}

}  // namespace fastnn::datasets
