#include "fastnn/hooks.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/config/value_parse.h"
#include "src/io/atomic_file.h"
#include "src/io/event_writer.h"
#include "src/log/log.h"

namespace fastnn::train {
namespace {

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Requests a stop once the global step reaches stop_at_step (absolute).
class StopAtStepHook : public Hook {
 public:
  void begin(TrainControl& c) override { check(c, c.global_step()); }
  void after_step(TrainControl& c, const StepStats& s) override { check(c, s.global_step); }
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }

 private:
  void check(TrainControl& c, int64_t step) {
    if (step >= c.hparams().stop_at_step) {
      c.request_stop("reached stop_at_step=" + std::to_string(c.hparams().stop_at_step));
    }
  }
};

/// FastNN's LoggingTensorHook line, every log_loss_every_n_iters steps,
/// plus the share of the interval spent waiting for input and the ETA.
class LoggingTensorHook : public Hook {
 public:
  void begin(TrainControl& c) override {
    last_time_ = Clock::now();
    last_step_ = c.global_step();
    last_samples_ = 0;
  }
  bool needs_metrics(const TrainControl& c, int64_t step) const override {
    const int64_t every = c.hparams().log_loss_every_n_iters;
    return every > 0 && step % every == 0;
  }
  void after_step(TrainControl& c, const StepStats& s) override {
    samples_ += s.batch_samples;
    input_secs_ += s.spans.input_end - s.spans.input_begin;
    if (!needs_metrics(c, s.global_step)) return;
    const double elapsed = secs_since(last_time_);
    const int64_t steps = s.global_step - last_step_;
    const double per_step = steps > 0 ? elapsed / steps : 0.0;
    const double per_sec = elapsed > 0 ? (samples_ - last_samples_) / elapsed : 0;
    const double data_share = elapsed > 0 ? 100.0 * input_secs_ / elapsed : 0;
    const int64_t final_step = c.final_step();
    std::string eta = "?";
    if (final_step >= s.global_step && per_step > 0) {
      eta = format_duration(per_step * static_cast<double>(final_step - s.global_step));
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "[%.4f secs/step,\t%.4f samples/sec]\tloss = %.6g,\t"
                  "accuracy = %.6g,\tlrate = %.6g,\tglobal_step = %lld\t"
                  "(data %.1f%%, ETA %s)",
                  per_step, per_sec, s.loss, s.accuracy, s.learning_rate,
                  static_cast<long long>(s.global_step), data_share, eta.c_str());
    log::info() << line;
    last_time_ = Clock::now();
    last_step_ = s.global_step;
    last_samples_ = samples_;
    input_secs_ = 0;
  }

 private:
  static std::string format_duration(double secs) {
    const auto t = static_cast<long long>(secs + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return buf;
  }
  Clock::time_point last_time_;
  int64_t last_step_ = 0;
  int64_t samples_ = 0, last_samples_ = 0;
  double input_secs_ = 0;
};

/// TF's NanTensorHook(fail_on_nan_loss=True): a non-finite loss, or
/// non-finite gradients that loss scaling did not absorb, stops training
/// with DivergedError (exit 4) naming the step. Always installed, first.
class NanTensorHook : public Hook {
 public:
  /// A step that left its numbers on the device is checked there (Step).
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }
  void after_step(TrainControl&, const StepStats& s) override {
    if (!s.metrics_read) return;
    std::string what;
    if (!std::isfinite(s.loss)) {
      what = "loss is " + std::to_string(s.loss);
    } else if (!s.skipped && !std::isfinite(s.gradient_norm)) {
      what = "gradient norm is " + std::to_string(s.gradient_norm);
    } else {
      return;
    }
    throw DivergedError(what + " at global_step " + std::to_string(s.global_step) +
                        " (lower learning_rate, or set max_gradient_norm?)");
  }
};

/// Saves every save_checkpoints_steps steps and every save_interval_secs
/// seconds (either may be 0 = off), and at the end.
class CheckpointSaverHook : public Hook {
 public:
  void begin(TrainControl& c) override {
    last_time_ = Clock::now();
    last_saved_ = c.global_step();
  }
  /// A save follows a step that read its numbers, so a step with Inf/NaN
  /// has stopped the run before its weights are written. One due by time
  /// after a step that did not read waits for the next step, which reads.
  bool needs_metrics(const TrainControl& c, int64_t step) const override {
    return due(c.hparams(), step);
  }
  void after_step(TrainControl& c, const StepStats& s) override {
    if (s.metrics_read && due(c.hparams(), s.global_step)) save(c, s.global_step);
  }
  void end(TrainControl& c) override {
    if (c.global_step() != last_saved_) save(c, c.global_step());
  }

 private:
  void save(TrainControl& c, int64_t step) {
    c.save_checkpoint();
    last_saved_ = step;
    last_time_ = Clock::now();
  }
  bool due(const HParams& hp, int64_t step) const {
    const bool by_steps = hp.save_checkpoints_steps > 0 && step % hp.save_checkpoints_steps == 0;
    const bool by_time =
        hp.save_interval_secs > 0 && secs_since(last_time_) >= hp.save_interval_secs;
    return by_steps || by_time;
  }
  Clock::time_point last_time_;
  int64_t last_saved_ = -1;
};

/// Every profile_every_n_iters steps on worker profile_at_task, writes
/// timeline-<step>.json (Chrome trace format): the step's phases on one
/// track and LibTorch's operators (aten::conv2d, ...) on a second, from
/// LibTorch's profiler running over that step only.
class ProfilerHook : public Hook {
 public:
  void before_step(TrainControl& c) override {
    const auto& hp = c.hparams();
    const int64_t next = c.global_step() + 1;
    if (hp.profile_every_n_iters <= 0 || c.rank() != hp.profile_at_task ||
        next % hp.profile_every_n_iters != 0) {
      return;
    }
    profile_.emplace(trace_.emplace());
    started_ = c.now();
  }
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }
  void after_step(TrainControl& control, const StepStats& stats) override {
    if (!profile_) return;
    profile_.reset();  // writes the operators' trace
    const auto& hp = control.hparams();
    std::string dir = control.writes_train_dir() ? hp.train_dir : hp.output_dir;
    std::filesystem::create_directories(dir);
    const auto path =
        std::filesystem::path(dir) / ("timeline-" + std::to_string(stats.global_step) + ".json");
    const auto& spans = stats.spans;
    const struct {
      const char* name;
      double begin, end;
    } phases[] = {{"input_wait", spans.input_begin, spans.input_end},
                  {"forward", spans.input_end, spans.forward_end},
                  {"backward", spans.forward_end, spans.backward_end},
                  {"optimizer", spans.backward_end, spans.optimizer_end}};
    const int pid = control.rank();
    nlohmann::json events = nlohmann::json::array();
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", "step phases"}}}});
    for (const auto& phase : phases) {
      events.push_back({{"name", phase.name},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", phase.begin * 1e6},
                        {"dur", (phase.end - phase.begin) * 1e6},
                        {"args", {{"global_step", stats.global_step}}}});
    }
    add_operators(trace_->str(), started_, pid, events);
    trace_.reset();
    io::write_file_atomic(path.string(), nlohmann::json{{"traceEvents", events}}.dump(1) + "\n");
  }

 private:
  // LibTorch's legacy profiler writes a JSON array of complete ("X")
  // events with microsecond times from its own start (`started`, seconds
  // on the phases' clock); they are shifted onto the phases' clock.
  static void add_operators(const std::string& trace, double started, int pid,
                            nlohmann::json& events) {
    nlohmann::json ops = nlohmann::json::parse(trace, nullptr, false);
    if (!ops.is_array()) return;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 1},
                      {"args", {{"name", "LibTorch operators"}}}});
    const double shift = started * 1e6;
    for (auto& e : ops) {
      if (!e.is_object() || e.value("ph", "") != "X") continue;
      events.push_back({{"name", e.value("name", "?")},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", 1},
                        {"ts", e.value("ts", 0.0) + shift},
                        {"dur", e.value("dur", 0.0)}});
    }
  }
  std::optional<std::ostringstream> trace_;
  std::optional<torch::autograd::profiler::RecordProfile> profile_;
  double started_ = 0;
};

/// TensorBoard scalars (loss, accuracy, learning rate, images/sec,
/// global_step/sec) into train_dir/events.out.tfevents.*: after the first
/// step, every save_summaries_secs seconds, and at the end.
class SummarySaverHook : public Hook {
 public:
  void begin(TrainControl& c) override {
    if (!c.writes_train_dir()) return;
    writer_ = std::make_unique<io::EventWriter>(c.hparams().train_dir);
    last_time_ = Clock::now();
    last_step_ = c.global_step();
  }
  /// Written after a step that read its numbers; one due by time after a
  /// step that did not waits for the next step, which reads.
  bool needs_metrics(const TrainControl& c, int64_t) const override {
    return writer_ && due(c.hparams());
  }
  void after_step(TrainControl& c, const StepStats& s) override {
    if (!writer_) return;
    samples_ += s.batch_samples;
    if (!s.metrics_read) return;
    last_ = s;
    have_last_ = true;
    if (due(c.hparams())) write(s);
  }
  void end(TrainControl&) override {
    if (writer_ && have_last_ && last_.global_step != last_step_) write(last_);
  }

 private:
  void write(const StepStats& s) {
    const double elapsed = std::max(secs_since(last_time_), 1e-9);
    const int64_t steps = s.global_step - last_step_;
    writer_->add_scalars(s.global_step, {{"loss", s.loss},
                                         {"accuracy", s.accuracy},
                                         {"learning_rate", s.learning_rate},
                                         {"images_per_sec", samples_ / elapsed},
                                         {"global_step/sec", steps / elapsed},
                                         {"gradient_norm", s.gradient_norm},
                                         {"loss_scale", s.loss_scale}});
    writer_->flush();
    written_ = true;
    samples_ = 0;
    last_step_ = s.global_step;
    last_time_ = Clock::now();
  }
  bool due(const HParams& hp) const {
    const auto secs = hp.save_summaries_secs;
    return !written_ || (secs > 0 && secs_since(last_time_) >= secs);
  }
  std::unique_ptr<io::EventWriter> writer_;
  Clock::time_point last_time_;
  int64_t last_step_ = 0;
  int64_t samples_ = 0;
  bool written_ = false, have_last_ = false;
  StepStats last_;
};

struct HookRow {
  const char* name;
  std::unique_ptr<Hook> (*make)();
};

template <typename H>
std::unique_ptr<Hook> make() {
  return std::make_unique<H>();
}

const HookRow kHooks[] = {
    {"StopAtStepHook", make<StopAtStepHook>},
    {"LoggingTensorHook", make<LoggingTensorHook>},
    {"CheckpointSaverHook", make<CheckpointSaverHook>},
    {"ProfilerHook", make<ProfilerHook>},
    {"SummarySaverHook", make<SummarySaverHook>},
    {"NanTensorHook", make<NanTensorHook>},
};

// The row of `name` (any case); ConfigError naming hp's hooks line.
const HookRow& hook_row(const HParams& hp, const std::string& name) {
  for (const auto& r : kHooks) {
    if (config::lower(name) == config::lower(r.name)) return r;
  }
  throw ConfigError(hp.where("hooks") + ": hooks: unknown hook " + config::quote_value(name) +
                    "; valid: " + join_list(hook_names()));
}

}  // namespace

std::vector<std::string> hook_names() { return names_of(kHooks); }

std::vector<std::unique_ptr<Hook>> make_hooks(const HParams& hp) {
  const HookRow& nan = hook_row(hp, "NanTensorHook");
  const HookRow& summary = hook_row(hp, "SummarySaverHook");
  std::vector<std::unique_ptr<Hook>> hooks;
  // A NaN run is never worth continuing: NanTensorHook runs whether it is
  // listed or not, and first, so no later hook checkpoints a NaN state.
  hooks.push_back(nan.make());
  const HookRow& stop = hook_row(hp, "StopAtStepHook");
  bool summaries = false, stops = false;
  for (const std::string& name : split_list(hp.hooks)) {
    const HookRow& r = hook_row(hp, name);
    if (&r == &nan) continue;
    summaries = summaries || &r == &summary;
    stops = stops || &r == &stop;
    hooks.push_back(r.make());
  }
  if (!stops && hp.sources.count("stop_at_step")) {
    log::warning() << hp.where("stop_at_step") << ": stop_at_step=" << hp.stop_at_step
                   << " is not used: hooks (" << hp.where("hooks")
                   << ") does not list StopAtStepHook, so training ends with num_epochs="
                   << hp.num_epochs << " or a signal; add StopAtStepHook to hooks to stop "
                   << "at that step";
  }
  // As TF's MonitoredTrainingSession with a summary_dir: summaries are
  // written whenever there is a train_dir, listed or not.
  if (!summaries && !hp.train_dir.empty() && hp.save_summaries_secs > 0) {
    hooks.push_back(summary.make());
  }
  return hooks;
}

}  // namespace fastnn::train
