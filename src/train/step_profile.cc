#include "src/train/step_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "fastnn/errors.h"
#include "src/compat/torch_compat.h"
#include "src/config/value_parse.h"
#include "src/log/log.h"

namespace fastnn::train {
namespace {

namespace kineto = torch::autograd::profiler;
namespace pimpl = torch::profiler::impl;

double event_ms(const kineto::KinetoEvent& e) {
#if FASTNN_TORCH_AT_LEAST(2, 0)
  return static_cast<double>(e.durationNs()) / 1e6;
#else
  return static_cast<double>(e.durationUs()) / 1e3;
#endif
}

// GPU kernels (and copies) on CUDA; operators on the CPU, whose times
// include the operators they call.
ProfileTable tabulate(const kineto::ProfilerResult& result, const torch::Device& device,
                      int64_t steps, double wall_ms, int top) {
  const auto kind = device.is_cuda() ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  std::map<std::string, ProfileRow> by_name;
  ProfileTable table;
  table.device_kind = device.is_cuda() ? "CUDA kernels" : "CPU operators (inclusive)";
  table.steps = steps;
  table.wall_ms = wall_ms;
  for (const auto& e : result.events()) {
    if (e.deviceType() != kind) continue;
    const std::string name = e.name();
    auto& row = by_name[name];
    row.name = name;
    row.calls += 1;
    row.total_ms += event_ms(e);
    if (device.is_cuda()) table.total_ms += event_ms(e);
  }
  for (auto& [name, row] : by_name) table.rows.push_back(std::move(row));
  std::sort(table.rows.begin(), table.rows.end(),
            [](const ProfileRow& a, const ProfileRow& b) { return a.total_ms > b.total_ms; });
  if (table.rows.size() > static_cast<size_t>(top)) table.rows.resize(static_cast<size_t>(top));
  return table;
}

class ProfileHook : public Hook {
 public:
  ProfileHook(ProfileSpan span, const torch::Device& device, ProfileSink sink)
      : span_(std::move(span)), device_(device), sink_(std::move(sink)) {}

  void before_step(TrainControl& control) override {
    if (control.global_step() + 1 != span_.first || running_) return;
    const pimpl::ProfilerConfig config(pimpl::ProfilerState::KINETO);
    std::set<pimpl::ActivityType> activities{pimpl::ActivityType::CPU};
    if (device_.is_cuda()) activities.insert(pimpl::ActivityType::CUDA);
    kineto::prepareProfiler(config, activities);
    wait_for_device();
    kineto::enableProfiler(config, activities);
    running_ = true;
    start_ = std::chrono::steady_clock::now();
  }

  void after_step(TrainControl& control, const StepStats&) override {
    if (!running_ || control.global_step() < span_.last) return;
    stop(control.global_step() - span_.first + 1);
  }

  void after_run(TrainControl& control, const RunSummary&) override {
    // The run ended inside the span: the steps it has.
    if (running_) stop(control.global_step() - span_.first + 1);
  }

  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }

 private:
  void wait_for_device() const {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  }

  void stop(int64_t steps) {
    wait_for_device();
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
            .count();
    running_ = false;
    auto result = kineto::disableProfiler();
    const ProfileTable table = tabulate(*result, device_, steps, wall_ms, span_.top);
    log::chief() << "profile of global steps " << span_.first << ".." << span_.first + steps - 1
                 << " (FASTNN_PROFILE_STEPS):\n"
                 << format_profile(table);
    if (sink_) sink_(table);
    if (span_.trace_path.empty()) return;
    try {
      result->save(span_.trace_path);
      log::chief() << "profile: Chrome trace written to " << span_.trace_path;
    } catch (const c10::Error& e) {  // a LibTorch built without Kineto (Debian's)
      log::warning() << "profile: no Chrome trace written (FASTNN_PROFILE_TRACE): "
                     << e.what_without_backtrace();
    }
  }

  ProfileSpan span_;
  torch::Device device_;
  ProfileSink sink_;
  bool running_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::optional<ProfileSpan> profile_span_from_env() {
  const char* value = std::getenv("FASTNN_PROFILE_STEPS");
  if (!value || !*value) return std::nullopt;
  const std::string text(value);
  const auto colon = text.find(':');
  ProfileSpan span;
  const bool ok =
      colon != std::string::npos &&
      config::parse_int(text.substr(0, colon), &span.first) == config::NumberStatus::kOk &&
      config::parse_int(text.substr(colon + 1), &span.last) == config::NumberStatus::kOk &&
      span.first >= 1 && span.last >= span.first;
  if (!ok) {
    throw ConfigError("FASTNN_PROFILE_STEPS=" + text +
                      ": expected FIRST:LAST, global steps with 1 <= FIRST <= LAST (e.g. 21:25)");
  }
  if (const char* trace = std::getenv("FASTNN_PROFILE_TRACE")) span.trace_path = trace;
  if (const char* top = std::getenv("FASTNN_PROFILE_TOP")) {
    int64_t n = 0;
    if (config::parse_int(top, &n) != config::NumberStatus::kOk || n < 1) {
      throw ConfigError(std::string("FASTNN_PROFILE_TOP=") + top + ": expected a positive integer");
    }
    span.top = static_cast<int>(n);
  }
  return span;
}

std::string format_profile(const ProfileTable& t) {
  std::ostringstream out;
  char line[512];
  const double steps = static_cast<double>(std::max<int64_t>(t.steps, 1));
  std::snprintf(line, sizeof line, "  %lld step(s), wall %.2f ms/step",
                static_cast<long long>(t.steps), t.wall_ms / steps);
  out << line;
  if (t.total_ms > 0) {
    std::snprintf(line, sizeof line, "; %s %.2f ms/step (%.0f %% of the wall time)",
                  t.device_kind.c_str(), t.total_ms / steps,
                  t.wall_ms > 0 ? 100.0 * t.total_ms / t.wall_ms : 0.0);
    out << line;
  }
  out << "\n  " << t.device_kind << " by total time: ms/step, calls/step, name\n";
  for (const auto& r : t.rows) {
    std::snprintf(line, sizeof line, "  %9.3f %7.1f  %.300s\n", r.total_ms / steps,
                  static_cast<double>(r.calls) / steps, r.name.c_str());
    out << line;
  }
  return out.str();
}

std::unique_ptr<Hook> make_profile_hook(const ProfileSpan& span, const torch::Device& device,
                                        ProfileSink sink) {
  return std::make_unique<ProfileHook>(span, device, std::move(sink));
}

}  // namespace fastnn::train
