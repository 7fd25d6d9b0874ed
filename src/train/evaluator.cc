#include "src/train/evaluator.h"

#include <c10/util/Exception.h>
#include <fcntl.h>
#include <sys/file.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "fastnn/errors.h"
#include "src/io/event_writer.h"
#include "src/io/memory_limit.h"
#include "src/log/log.h"
#include "src/train/builder.h"
#include "src/train/checkpoint.h"
#include "src/train/device.h"
#include "src/train/out_of_memory.h"
#include "src/train/signals.h"
#include "src/train/train_state.h"

namespace fastnn::train {

namespace {

// Hands out a pass's batches on `device`: from the cache when it holds a
// whole pass, else from a pipeline, keeping them in the cache (host copies)
// while they fit.
class EvalInput {
 public:
  EvalInput(const datasets::PipelineOptions& options, const ModelAndData& b,
            const torch::Device& device, EvalCache* cache)
      : device_(device), cache_(cache), split_(b.dataset.split) {
    if (cache_ && cache_->complete) return;
    pipeline_ = std::make_unique<datasets::Pipeline>(options);
    feed_ = make_device_feed(*pipeline_, device);
    keeping_ = cache_ && !cache_->too_large && cache_->budget_bytes > 0;
    if (keeping_) {
      cache_->batches.clear();
      cache_->bytes = 0;
    }
  }
  std::optional<datasets::Batch> next() {
    if (!feed_) {
      if (next_ >= cache_->batches.size()) return std::nullopt;
      const datasets::Batch& c = cache_->batches[next_++];
      return datasets::Batch{c.images.to(device_), c.labels.to(device_), c.index};
    }
    auto batch = feed_->next();
    if (keeping_ && batch) keep(*batch);
    if (keeping_ && !batch) {
      cache_->complete = true;
      log::info() << "eval " << split_ << ": its decoded batches are kept in memory ("
                  << cache_->bytes / (1 << 20) << " MiB) for the next evaluations";
    }
    return batch;
  }
  /// A pass cut short (a stop signal) leaves no partial cache behind.
  void abandon() {
    if (keeping_ && !cache_->complete) {
      cache_->batches.clear();
      cache_->bytes = 0;
    }
  }

 private:
  void keep(const datasets::Batch& batch) {
    const int64_t bytes = static_cast<int64_t>(batch.images.nbytes() + batch.labels.nbytes());
    if (cache_->bytes + bytes > cache_->budget_bytes) {
      log::info() << "eval " << split_ << ": its decoded batches pass "
                  << cache_->budget_bytes / (1 << 20)
                  << " MiB (an eighth of the memory): read again at every evaluation";
      cache_->too_large = true;
      cache_->batches.clear();
      cache_->bytes = 0;
      keeping_ = false;
      return;
    }
    cache_->bytes += bytes;
    // Host copies: on the CPU the batch itself (the pipeline's tensors are
    // its own per batch).
    cache_->batches.push_back({batch.images.cpu(), batch.labels.cpu(), batch.index});
  }
  torch::Device device_;
  EvalCache* cache_;
  std::string split_;
  std::unique_ptr<datasets::Pipeline> pipeline_;
  std::unique_ptr<DeviceFeed> feed_;
  bool keeping_ = false;
  size_t next_ = 0;
};

EvalResult evaluate_batches(const EvalOptions& options, const ModelAndData& built,
                            EvalCache* cache) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult result;
  result.split = built.dataset.split;
  result.class_names = built.dataset.labels;
  result.class_correct.assign(built.num_classes, 0);
  result.class_total.assign(built.num_classes, 0);
  const bool was_training = built.model->is_training();
  built.model->eval();
  // Evaluated where the model is (the training device, for the hook).
  const torch::Device device = device_of(*built.model);
  EvalInput input(options.pipeline, built, device, cache);
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  const int64_t top_k = std::min<int64_t>(5, built.num_classes);
  const auto counts = torch::TensorOptions().dtype(torch::kInt64).device(device);
  auto correct = torch::zeros({built.num_classes}, counts);
  auto total = torch::zeros({built.num_classes}, counts);
  int64_t batches = 0;
  while (auto batch = input.next()) {
    // A stop request (SIGINT/SIGTERM) is answered within a batch, not at
    // the end of the split.
    if (stop_signal()) {
      result.stopped = true;
      input.abandon();
      break;
    }
    auto logits = built.model->forward(to_data_format(options.channels_last, batch->images)).logits;
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch->labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    auto topk = std::get<1>(logits.topk(top_k, 1));
    auto hits = topk.eq(batch->labels.unsqueeze(1));
    auto top1 = hits.select(1, 0);
    result.top1_correct += top1.sum().item<int64_t>();
    result.top5_correct += hits.any(1).sum().item<int64_t>();
    result.samples += batch->labels.size(0);
    total.index_add_(0, batch->labels, torch::ones_like(batch->labels));
    correct.index_add_(0, batch->labels, top1.to(torch::kInt64));
    if (options.max_batches > 0 && ++batches == options.max_batches) {
      input.abandon();
      break;
    }
  }
  built.model->train(was_training);
  correct = correct.cpu();
  total = total.cpu();
  for (int64_t label = 0; label < built.num_classes; ++label) {
    result.class_correct[label] = correct[label].item<int64_t>();
    result.class_total[label] = total[label].item<int64_t>();
  }
  if (result.samples > 0) {
    result.top1 = static_cast<double>(result.top1_correct) / result.samples;
    result.top5 = static_cast<double>(result.top5_correct) / result.samples;
    result.loss = loss_sum / result.samples;
  }
  result.wall_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace

int64_t default_eval_cache_budget() {
  const double memory = io::usable_memory_bytes();
  return memory > 0 ? static_cast<int64_t>(memory / 8) : 0;
}

EvalResult evaluate_model(const EvalOptions& o, const ModelAndData& b, EvalCache* cache) {
  try {
    return evaluate_batches(o, b, cache);
  } catch (const c10::OutOfMemoryError& e) {
    throw out_of_memory_error(e, device_of(*b.model),
                              "evaluating the " + b.dataset.split + " split at eval_batch_size=" +
                                  std::to_string(o.pipeline.batch_size),
                              "eval_batch_size");
  }
}

EvalResult evaluate(const EvalOptions& o, const DeviceOptions& device_opts, const ModelAndData& b,
                    const std::string& path) {
  const TensorMap ckpt = load_tensors(path);
  RestoreOptions ro;
  ro.use_moving_averages = use_moving_averages(*b.model, ckpt, path, o.moving_averages);
  restore_model(*b.model, ckpt, path, ro);
  // The same device choice as training (a GPU when present, device=cpu to
  // keep it off one).
  const torch::Device device = choose_device(device_opts, 0);
  if (device.is_cuda()) {
    prepare_device(device_opts, device);
    b.model->to(device);
  }
  EvalResult r = evaluate_model(o, b);
  r.checkpoint = path;
  r.moving_averages = ro.use_moving_averages;
  if (auto it = ckpt.find("global_step"); it != ckpt.end()) {
    r.global_step = it->second.item<int64_t>();
  }
  return r;
}

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// How often a waiting loop says what it waits for.
constexpr std::chrono::seconds kWaitReport{60};

/// The end of a training run as its metrics.json records it.
struct RunEnd {
  int64_t final_step = -1;
  int exit_status = 0;
  std::string stop_reason;
};

/// metrics.json's record, or nullopt when there is none (yet).
std::optional<RunEnd> recorded_end(const fs::path& train_dir) {
  std::ifstream in(train_dir / "metrics.json");
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    RunEnd e;
    e.final_step = j.value("final_step", int64_t{-1});
    e.exit_status = j.value("exit_status", 0);
    e.stop_reason = j.value("stop_reason", std::string());
    if (e.final_step < 0) return std::nullopt;
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // being replaced right now; read again next time
  }
}

/// A trainer holds train_dir's lock (CheckpointManager): a run is going on,
/// whatever an older metrics.json says. The probe holds a shared lock for
/// a moment only; a trainer starting then retries its own.
bool trainer_running(const fs::path& train_dir) {
  const int fd = ::open((train_dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the shared lock, if taken
  return held;
}

/// The loop's TensorBoard scalars in train_dir/eval_<split>/. A train_dir
/// the evaluator may not write to (read-only, another user's, full) costs
/// the summaries only, with one warning: the results are still printed.
class EvalSummaries {
 public:
  EvalSummaries(fs::path train_dir, std::string dir)
      : train_dir_(std::move(train_dir)), dir_(std::move(dir)) {}
  void add(const EvalResult& r) {
    if (failed_) return;
    const fs::path dir = dir_.empty() ? train_dir_ / ("eval_" + r.split) : fs::path(dir_);
    try {
      if (!events_) events_ = std::make_unique<io::EventWriter>(dir.string());
      events_->add_scalars(
          r.global_step,
          {{"eval/accuracy", r.top1}, {"eval/recall_5", r.top5}, {"eval/loss", r.loss}});
      events_->flush();
    } catch (const std::exception& e) {
      failed_ = true;
      events_.reset();
      log::warning() << "evaluation loop: cannot write TensorBoard summaries into " << dir.string()
                     << " (" << e.what() << "); evaluating on without them";
    }
  }

 private:
  fs::path train_dir_;
  std::string dir_;
  std::unique_ptr<io::EventWriter> events_;
  bool failed_ = false;
};

/// The newest model.ckpt-<step> of train_dir, if any.
std::optional<std::string> newest_checkpoint(const std::string& train_dir) {
  // The newest file, not the index: files appear whole (renamed into
  // place), and the index is written after them.
  const auto files = checkpoint_files(train_dir);
  if (files.empty()) return std::nullopt;
  return files.front();
}

}  // namespace

int evaluation_loop(const EvalLoopOptions& options, const std::string& train_dir,
                    const EvaluateCheckpoint& evaluate,
                    const std::function<void(const EvalResult&)>& report) {
  install_stop_signals();
  mark_state_saved();  // evaluation holds nothing a second signal could lose
  EvalSummaries summaries(train_dir, options.summary_dir);
  std::string last_path;
  int64_t last_step = -1;
  auto last_new = Clock::now();
  // The next "waiting" line: at once before the first checkpoint, then
  // once a minute of waiting.
  auto next_said = Clock::now();
  const auto interval = std::chrono::seconds(std::max<int64_t>(1, options.interval_secs));
  while (true) {
    if (const int sig = stop_signal()) return sig == SIGINT ? kExitSigint : kExitSigterm;
    const std::optional<std::string> latest = newest_checkpoint(train_dir);
    if (latest && *latest != last_path && fs::exists(*latest)) {
      EvalResult result;
      try {
        result = evaluate(*latest);
      } catch (const DataError&) {
        // Pruned (max_to_keep) between reading the index and the file: the
        // index names a newer one by now.
        if (!fs::exists(*latest)) continue;
        throw;
      }
      if (result.stopped) continue;  // by a signal: not a result
      report(result);
      summaries.add(result);
      last_path = *latest;
      last_step = result.global_step;
      last_new = Clock::now();
      next_said = last_new + kWaitReport;
      continue;
    }
    // The run has ended, whatever the end (finished, diverged, a data
    // error, a signal), when metrics.json records it and no trainer holds
    // the train_dir: a resumed run is going on behind its predecessor's
    // record. A record older than the checkpoints is a killed run's
    // predecessor's, and the loop waits on (for a restart, or
    // eval_timeout_secs).
    const auto end = recorded_end(train_dir);
    const bool recorded = end && end->final_step >= last_step;
    if (recorded && !trainer_running(train_dir)) {
      if (newest_checkpoint(train_dir) != latest) continue;  // written meanwhile
      std::ostringstream why;
      if (end->exit_status == kExitOk) {
        why << "the training run finished at global_step " << end->final_step;
      } else {
        why << "the training run ended at global_step " << end->final_step << " with exit status "
            << end->exit_status;
      }
      if (!end->stop_reason.empty()) why << " (" << end->stop_reason << ")";
      if (last_step < 0) {
        throw DataError("evaluation loop: " + why.str() + " and wrote no checkpoint into " +
                        train_dir + ": nothing to evaluate");
      }
      log::info() << "evaluation loop: " << why.str() << "; the last checkpoint, global_step "
                  << last_step << ", is evaluated";
      return kExitOk;
    }
    const double idle = std::chrono::duration<double>(Clock::now() - last_new).count();
    if (options.timeout_secs > 0 && idle >= static_cast<double>(options.timeout_secs)) {
      log::info() << "evaluation loop: no new checkpoint for " << options.timeout_secs
                  << " s (eval_timeout_secs)";
      return kExitOk;
    }
    if (Clock::now() >= next_said) {
      auto line = log::info();
      line << "evaluation loop: waiting for a checkpoint ";
      if (last_step >= 0) line << "newer than global_step " << last_step << " ";
      line << "(model.ckpt-*) in " << train_dir << ", checking every " << interval.count() << " s";
      if (options.timeout_secs > 0) line << " for up to eval_timeout_secs=" << options.timeout_secs;
      if (idle >= 1) line << " (" << static_cast<int64_t>(idle) << " s so far)";
      next_said = Clock::now() + kWaitReport;
    }
    // Sleep in short slices so a signal, and the exit of a trainer that
    // has recorded its end, are answered promptly.
    const auto wake = Clock::now() + interval;
    while (Clock::now() < wake && !stop_signal() && !(recorded && !trainer_running(train_dir))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void write_eval_summary(const std::string& dir, const EvalResult& r) {
  io::EventWriter events(dir);
  events.add_scalars(r.global_step,
                     {{"eval/accuracy", r.top1}, {"eval/recall_5", r.top5}, {"eval/loss", r.loss}});
  events.flush();
}

std::string eval_result_json(const EvalResult& r) {
  nlohmann::json j = {{"checkpoint", r.checkpoint},
                      {"split", r.split},
                      {"global_step", r.global_step},
                      {"samples", r.samples},
                      {"moving_averages", r.moving_averages},
                      {"top1_correct", r.top1_correct},
                      {"top5_correct", r.top5_correct},
                      {"accuracy", r.top1},
                      {"recall_5", r.top5},
                      {"loss", r.loss},
                      {"wall_secs", r.wall_secs},
                      {"class_correct", r.class_correct},
                      {"class_total", r.class_total}};
  return j.dump();
}

}  // namespace fastnn::train
