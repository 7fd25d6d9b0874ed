#include "src/train/run_hooks.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "src/io/atomic_file.h"
#include "fastnn/hparams.h"
#include "src/log/log.h"

namespace fastnn::train {
namespace {

std::string without_final_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class StatisticsHook : public Hook {
 public:
  StatisticsHook(models::ClassifierImpl& model, optim::Optimizer& optimizer)
      : model_(model), optimizer_(optimizer) {}

  void begin(TrainControl& c) override {
    const HParams& hp = c.hparams();
    if (hp.print_model_statistics) {
      log::chief() << without_final_newline(models::model_statistics_table(model_));
    }
    if (hp.log_trainable_vars_statistics) {
      int64_t total = 0;
      for (const auto& v : optimizer_.variables()) {
        log::chief() << "trainable " << v.name << " " << v.var.sizes();
        total += v.var.numel();
      }
      log::chief() << "trainable variables: " << optimizer_.variables().size() << " tensors, "
                   << total << " parameters";
    }
    if (hp.log_optimizer_vars_statistics) {
      int64_t total = 0;
      for (const auto& s : optimizer_.slots()) {
        log::chief() << "optimizer " << s.name << " " << s.value.sizes();
        total += s.value.numel();
      }
      log::chief() << "optimizer slots: " << total << " values";
    }
  }

 private:
  models::ClassifierImpl& model_;
  optim::Optimizer& optimizer_;
};

class RunReportHook : public Hook {
 public:
  explicit RunReportHook(PipelineStatsFn stats) : stats_(std::move(stats)) {}

  void after_run(TrainControl&, const RunSummary& r) override {
    const double wall = r.wall_secs;
    log::info() << "Stopped at global_step " << r.final_step << ": " << r.stop_reason << "; "
                << (r.final_step - r.start_step) << " steps in " << wall << " s, "
                << (wall > 0 ? r.samples / wall : 0) << " images/sec, data wait "
                << (wall > 0 ? 100 * r.data_wait_secs / wall : 0) << "%";
    if (!r.saved_checkpoint.empty()) log::info() << "Saved " << r.saved_checkpoint;
    const auto stats = stats_();
    if (stats.records_skipped) log::info() << datasets::describe_skipped(stats);
  }

 private:
  PipelineStatsFn stats_;
};

class MetricsHook : public Hook {
 public:
  MetricsHook(PipelineStatsFn stats, const LossScaler& scaler, const EvaluationHook* eval)
      : stats_(std::move(stats)), scaler_(scaler), eval_(eval) {}

  void after_run(TrainControl& c, const RunSummary& r) override {
    if (!c.writes_train_dir()) return;
    const auto stats = stats_();
    const bool evaluated = eval_ && eval_->last();
    const double ips = r.wall_secs > 0 ? r.samples / r.wall_secs : 0;
    nlohmann::json j = {
        {"final_step", r.final_step},
        {"steps_this_run", r.final_step - r.start_step},
        {"loss", r.loss},
        {"train_accuracy", r.accuracy},
        {"images_per_sec", ips},
        {"wall_secs", r.wall_secs},
        {"data_wait_secs", r.data_wait_secs},
        {"records_skipped", stats.records_skipped},
        {"bytes_skipped", stats.bytes_skipped},
        {"loss_scale", scaler_.scale()},
        {"steps_skipped_overflow", scaler_.skipped_steps()},
        {"records_skipped_by_kind",
         {{"crc_mismatch", stats.skipped_crc_mismatch},
          {"truncated", stats.skipped_truncated},
          {"bad_example", stats.skipped_bad_example},
          {"bad_image", stats.skipped_bad_image},
          {"bad_label", stats.skipped_bad_label}}},
        {"stop_reason", r.stop_reason},
        {"eval_accuracy", evaluated ? nlohmann::json(eval_->last()->top1) : nlohmann::json()},
        {"eval_recall_5", evaluated ? nlohmann::json(eval_->last()->top5) : nlohmann::json()},
        {"exit_status", r.exit_code}};
    io::write_file_atomic((std::filesystem::path(c.hparams().train_dir) / "metrics.json").string(),
                          j.dump(2) + "\n");
  }

 private:
  PipelineStatsFn stats_;
  const LossScaler& scaler_;
  const EvaluationHook* eval_;
};

}  // namespace

std::unique_ptr<Hook> make_statistics_hook(models::ClassifierImpl& model,
                                           optim::Optimizer& optimizer) {
  return std::make_unique<StatisticsHook>(model, optimizer);
}

EvaluationHook::EvaluationHook(const HParams& hp, Built eval) : hp_(hp), eval_(std::move(eval)) {}

void EvaluationHook::begin(TrainControl& c) {
  start_step_ = c.global_step();
}

void EvaluationHook::after_step(TrainControl&, const StepStats& s) {
  if (s.global_step % hp_.eval_every_n_iters == 0) evaluate(s.global_step);
}

void EvaluationHook::end(TrainControl& c) {
  const int64_t step = c.global_step();
  if (step > start_step_ && step % hp_.eval_every_n_iters != 0) evaluate(step);
}

void EvaluationHook::evaluate(int64_t step) {
  last_ = evaluate_model(hp_, eval_);
  const auto& r = *last_;
  char line[256];
  std::snprintf(line, sizeof line,
                "eval %s at global_step %lld: accuracy = %.4f, recall_5 = %.4f, "
                "loss = %.4f (%lld samples, %.1f s)",
                r.split.c_str(), static_cast<long long>(step), r.top1, r.top5, r.loss,
                static_cast<long long>(r.samples), r.wall_secs);
  log::info() << line;
}

std::unique_ptr<Hook> make_run_report_hook(PipelineStatsFn stats) {
  return std::make_unique<RunReportHook>(std::move(stats));
}

std::unique_ptr<Hook> make_metrics_hook(PipelineStatsFn stats, const LossScaler& scaler,
                                        const EvaluationHook* eval) {
  return std::make_unique<MetricsHook>(std::move(stats), scaler, eval);
}

}  // namespace fastnn::train
