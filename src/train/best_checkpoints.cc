#include "src/train/best_checkpoints.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"
#include "src/log/log.h"

namespace fastnn::train {
namespace fs = std::filesystem;

EvalHistory::EvalHistory(std::string dir, int64_t keep, std::string metric)
    : dir_(std::move(dir)), keep_(keep), metric_(std::move(metric)) {
  if (dir_.empty()) return;
  const fs::path path = fs::path(dir_) / kBestCheckpointsFile;
  std::ifstream in(path);
  if (!in) return;
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("metric", std::string()) != metric_) {
      log::warning() << path.string() << " ranks by " << j.value("metric", std::string("?"))
                     << ", this run by " << metric_
                     << ": its history is not continued (its best.ckpt-* files stay)";
      return;
    }
    for (const auto& e : j.at("evaluations")) {
      evaluations_.emplace_back(e.at(0).get<int64_t>(), e.at(1).get<double>());
    }
    for (const auto& b : j.at("best_checkpoints")) {
      best_.push_back({b.at("step").get<int64_t>(), b.at("accuracy").get<double>(),
                       b.at("file").get<std::string>()});
    }
  } catch (const nlohmann::json::exception& e) {
    log::warning() << path.string() << " is not readable (" << e.what()
                   << "): the evaluation history starts over";
    evaluations_.clear();
    best_.clear();
  }
}

void EvalHistory::resume_at(int64_t step) {
  if (step == 0 && !evaluations_.empty()) {
    // Not a resumed run: the history is an earlier run's, whose files are
    // not this run's to remove.
    log::warning() << (fs::path(dir_) / kBestCheckpointsFile).string()
                   << " is from an earlier run (train_dir has no model.ckpt-* to resume "
                      "from): starting a new history; its best.ckpt-* files stay";
    evaluations_.clear();
    best_.clear();
  }
  const auto later = [step](const auto& e) { return e.first > step; };
  evaluations_.erase(std::remove_if(evaluations_.begin(), evaluations_.end(), later),
                     evaluations_.end());
  for (auto it = best_.begin(); it != best_.end();) {
    if (it->step > step) {
      std::error_code ec;
      if (!dir_.empty()) fs::remove(fs::path(dir_) / it->file, ec);
      it = best_.erase(it);
    } else {
      ++it;
    }
  }
  // Kept ones beyond a smaller keep_best_checkpoints of this run go too.
  while (static_cast<int64_t>(best_.size()) > keep_) {
    std::error_code ec;
    if (!dir_.empty()) fs::remove(fs::path(dir_) / best_.back().file, ec);
    best_.pop_back();
  }
  write();
}

bool EvalHistory::add(int64_t step, double accuracy, const std::function<TensorMap()>& tensors) {
  evaluations_.erase(std::remove_if(evaluations_.begin(), evaluations_.end(),
                                    [step](const auto& e) { return e.first >= step; }),
                     evaluations_.end());
  best_.erase(std::remove_if(best_.begin(), best_.end(),
                             [step](const BestCheckpoint& b) { return b.step == step; }),
              best_.end());
  const bool improved = evaluations_.empty() || accuracy > best_accuracy();
  evaluations_.emplace_back(step, accuracy);
  const bool kept =
      keep_ > 0 && (static_cast<int64_t>(best_.size()) < keep_ || accuracy > best_.back().accuracy);
  if (kept) {
    BestCheckpoint b{step, accuracy, "best.ckpt-" + std::to_string(step)};
    if (!dir_.empty()) save_tensors((fs::path(dir_) / b.file).string(), tensors());
    // After every equal accuracy: the earlier step ranks first.
    const auto at = std::find_if(best_.begin(), best_.end(),
                                 [&](const BestCheckpoint& k) { return k.accuracy < accuracy; });
    best_.insert(at, std::move(b));
    if (static_cast<int64_t>(best_.size()) > keep_) {
      std::error_code ec;
      if (!dir_.empty()) fs::remove(fs::path(dir_) / best_.back().file, ec);
      best_.pop_back();
    }
  }
  write();
  return improved;
}

int64_t EvalHistory::best_step() const {
  int64_t step = -1;
  double best = 0;
  for (const auto& [s, a] : evaluations_) {
    if (step < 0 || a > best) {
      step = s;
      best = a;
    }
  }
  return step;
}

double EvalHistory::best_accuracy() const {
  double best = 0;
  for (const auto& e : evaluations_) best = std::max(best, e.second);
  return best;
}

int64_t EvalHistory::evaluations_without_improvement() const {
  const int64_t at = best_step();
  if (at < 0) return 0;
  return std::count_if(evaluations_.begin(), evaluations_.end(),
                       [at](const auto& e) { return e.first > at; });
}

void EvalHistory::write() const {
  if (dir_.empty()) return;
  nlohmann::json j;
  j["metric"] = metric_;
  j["evaluations"] = nlohmann::json::array();
  for (const auto& [s, a] : evaluations_) j["evaluations"].push_back({s, a});
  j["best_checkpoints"] = nlohmann::json::array();
  for (const auto& b : best_) {
    j["best_checkpoints"].push_back({{"step", b.step}, {"accuracy", b.accuracy}, {"file", b.file}});
  }
  io::write_file_atomic((fs::path(dir_) / kBestCheckpointsFile).string(), j.dump(2) + "\n");
}

}  // namespace fastnn::train
