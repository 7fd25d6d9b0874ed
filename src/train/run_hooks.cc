#include "src/train/run_hooks.h"

#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "datasets/dataset_factory.h"
#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/io/atomic_file.h"
#include "src/log/log.h"
#include "src/train/builder.h"

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
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }

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
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }

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

// metrics.json's record of what the evaluations during training decided.
void add_evaluation_outcome(const HParams& hp, const EvaluationHook& eval,
                            const RunSummary& summary, nlohmann::json& metrics) {
  metrics["eval_secs"] = eval.eval_secs();
  metrics["train_secs"] = summary.wall_secs - eval.eval_secs();
  if (hp.stop_at_accuracy) {
    const TargetReached& target = eval.target();
    nlohmann::json outcome = {{"target", *hp.stop_at_accuracy}, {"reached", target.step >= 0}};
    if (target.step >= 0) {
      outcome["step"] = target.step;
      outcome["accuracy"] = target.accuracy;
      outcome["split"] = target.split;
      outcome["train_secs"] = target.train_secs;
    }
    metrics["stop_at_accuracy"] = outcome;
  }
  const EvalHistory* history = eval.history();
  if (!history) return;
  if (hp.keep_best_checkpoints > 0) {
    nlohmann::json best = nlohmann::json::array();
    for (const auto& checkpoint : history->best()) {
      best.push_back({{"step", checkpoint.step},
                      {"accuracy", checkpoint.accuracy},
                      {"path", (std::filesystem::path(hp.train_dir) / checkpoint.file).string()}});
    }
    metrics["best_checkpoints"] = {{"metric", history->metric()}, {"kept", best}};
  }
  if (hp.early_stopping_patience > 0) {
    metrics["early_stopping"] = {
        {"patience", hp.early_stopping_patience},
        {"metric", history->metric()},
        {"stopped", eval.early_stopped()},
        {"evaluations_without_improvement", history->evaluations_without_improvement()},
        {"best_step", history->best_step()},
        {"best_accuracy", history->best_accuracy()}};
  }
}

class MetricsHook : public Hook {
 public:
  MetricsHook(PipelineStatsFn stats, const LossScaler& scaler, const EvaluationHook* eval)
      : stats_(std::move(stats)), scaler_(scaler), eval_(eval) {}
  bool needs_metrics(const TrainControl&, int64_t) const override { return false; }

  void after_run(TrainControl& control, const RunSummary& summary) override {
    const auto stats = stats_();
    const double ips = summary.wall_secs > 0 ? summary.samples / summary.wall_secs : 0;
    nlohmann::json metrics = {{"final_step", summary.final_step},
                              {"steps_this_run", summary.final_step - summary.start_step},
                              {"loss", summary.loss},
                              {"train_accuracy", summary.accuracy},
                              {"images_per_sec", ips},
                              {"wall_secs", summary.wall_secs},
                              {"data_wait_secs", summary.data_wait_secs},
                              {"records_skipped", stats.records_skipped},
                              {"bytes_skipped", stats.bytes_skipped},
                              {"loss_scale", scaler_.scale()},
                              {"steps_skipped_overflow", scaler_.skipped_steps()},
                              {"records_skipped_by_kind",
                               {{"crc_mismatch", stats.skipped_crc_mismatch},
                                {"truncated", stats.skipped_truncated},
                                {"oversized", stats.skipped_oversized},
                                {"bad_example", stats.skipped_bad_example},
                                {"bad_image", stats.skipped_bad_image},
                                {"bad_label", stats.skipped_bad_label}}},
                              {"stop_reason", summary.stop_reason},
                              {"eval_accuracy", nlohmann::json()},
                              {"eval_recall_5", nlohmann::json()},
                              {"exit_status", summary.exit_code}};
    const HParams& hp = control.hparams();
    RunResult result;
    result.exit_code = summary.exit_code;
    result.wall_secs = summary.wall_secs;
    result.final_step = summary.final_step;
    result.seed = hp.seed;
    result.train_loss = summary.final_step > summary.start_step ? summary.loss : std::nan("");
    if (eval_) result.evals = eval_->last();
    for (const auto& split_eval : result.evals) {
      metrics[split_eval.split + "_accuracy"] = split_eval.top1;
      metrics[split_eval.split + "_recall_5"] = split_eval.top5;
      metrics[split_eval.split + "_loss"] = split_eval.loss;
      metrics[split_eval.split + "_samples"] = split_eval.samples;
      if (split_eval.split == hp.eval_split_name) {
        metrics["eval_accuracy"] = split_eval.top1;
        metrics["eval_recall_5"] = split_eval.top5;
      }
    }
    if (eval_) add_evaluation_outcome(hp, *eval_, summary, metrics);
    if (control.rank() == 0) print_result(hp, result);
    if (!control.writes_train_dir()) return;
    io::write_file_atomic((std::filesystem::path(hp.train_dir) / "metrics.json").string(),
                          metrics.dump(2) + "\n");
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

EvaluationHook::EvaluationHook(const HParams& hp, std::vector<ModelAndData> evals,
                               std::function<bool()> swap_averages,
                               std::function<TensorMap()> state)
    : hp_(hp),
      evals_(std::move(evals)),
      swap_averages_(std::move(swap_averages)),
      state_(std::move(state)) {
  caches_.resize(evals_.size());
  const int64_t budget = default_eval_cache_budget();
  for (auto& cache : caches_) cache.budget_bytes = budget;
}

void EvaluationHook::begin(TrainControl& c) {
  if (hp_.keep_best_checkpoints <= 0 && hp_.early_stopping_patience <= 0) return;
  std::string split = hp_.eval_split_name;
  for (const ModelAndData& e : evals_) {
    if (e.dataset.split == "validation") split = "validation";
  }
  history_ = std::make_unique<EvalHistory>(c.writes_train_dir() ? hp_.train_dir : "",
                                           hp_.keep_best_checkpoints, split + "_accuracy");
  history_->resume_at(c.global_step());
}

bool EvaluationHook::needs_metrics(const TrainControl&, int64_t step) const {
  return hp_.eval_every_n_iters > 0 && step % hp_.eval_every_n_iters == 0;
}

void EvaluationHook::after_step(TrainControl& c, const StepStats& s) {
  // The training clock: to the end of the step, the evaluations so far
  // taken out.
  train_secs_ = s.spans.optimizer_end - eval_secs_;
  if (!needs_metrics(c, s.global_step)) return;
  const double start = c.now();
  if (evaluate(s.global_step)) judge(c, s.global_step, /*ending=*/false);
  eval_secs_ += c.now() - start;
}

void EvaluationHook::end(TrainControl& c) {
  if (c.global_step() == evaluated_step_) return;
  const double start = c.now();
  if (evaluate(c.global_step())) judge(c, c.global_step(), /*ending=*/true);
  eval_secs_ += c.now() - start;
}

bool EvaluationHook::evaluate(int64_t step) {
  std::vector<EvalResult> results;
  const bool averages = swap_averages_ && swap_averages_();
  for (size_t i = 0; i < evals_.size(); ++i) {
    try {
      results.push_back(evaluate_model(eval_options(hp_, evals_[i]), evals_[i], &caches_[i]));
    } catch (...) {
      if (averages) swap_averages_();
      throw;
    }
    const auto& result = results.back();
    if (result.stopped) {
      // A stop signal: the training loop stops after this step; a partial
      // pass is no result, and the last complete one stays reported.
      log::info() << "eval " << result.split << " at global_step " << step
                  << ": stopped by a signal after " << result.samples << " samples";
      break;
    }
    results.back().moving_averages = averages;
    char line[256];
    std::snprintf(line, sizeof line,
                  "eval %s at global_step %lld: accuracy = %.4f, recall_5 = %.4f, "
                  "loss = %.4f (%lld samples, %.1f s%s)",
                  result.split.c_str(), static_cast<long long>(step), result.top1, result.top5,
                  result.loss, static_cast<long long>(result.samples), result.wall_secs,
                  averages ? ", moving averages" : "");
    log::info() << line;
  }
  if (averages) swap_averages_();
  if (!results.empty() && results.back().stopped) return false;
  last_ = std::move(results);
  evaluated_step_ = step;
  return true;
}

const EvalResult* EvaluationHook::ranked(const std::vector<EvalResult>& results) const {
  const EvalResult* found = nullptr;
  for (const auto& r : results) {
    if (r.split == "validation") return &r;
    if (r.split == hp_.eval_split_name) found = &r;
  }
  return found;
}

void EvaluationHook::judge(TrainControl& control, int64_t step, bool ending) {
  const double train_secs = train_secs_;
  char text[256];
  if (hp_.stop_at_accuracy && target_.step < 0) {
    for (const auto& result : last_) {
      if (result.split != hp_.eval_split_name || result.top1 < *hp_.stop_at_accuracy) continue;
      target_ = {step, result.top1, result.split, train_secs};
      std::snprintf(text, sizeof text,
                    "reached stop_at_accuracy=%g: %s accuracy %.4f at global_step %lld after "
                    "%.1f s of training",
                    *hp_.stop_at_accuracy, result.split.c_str(), result.top1,
                    static_cast<long long>(step), train_secs);
      log::chief() << text;
      if (!ending) control.request_job_stop(text);
      break;
    }
  }
  const EvalResult* best = history_ ? ranked(last_) : nullptr;
  if (!best) return;
  history_->add(step, best->top1, state_);
  const int64_t patience = hp_.early_stopping_patience;
  if (!ending && patience > 0 && history_->evaluations_without_improvement() >= patience) {
    std::snprintf(text, sizeof text,
                  "early stopping: %lld evaluations without a %s above the best, %.4f at "
                  "global_step %lld",
                  static_cast<long long>(patience), history_->metric().c_str(),
                  history_->best_accuracy(), static_cast<long long>(history_->best_step()));
    log::chief() << text;
    early_stopped_ = true;
    control.request_job_stop(text);
  }
}

std::vector<std::string> evaluation_splits(const HParams& hp) {
  std::vector<std::string> splits;
  const datasets::DatasetOptions dataset = dataset_options(hp);
  if (datasets::has_split(dataset, "validation")) splits.push_back("validation");
  // Asked for by eval_every_n_iters, the eval split must exist (building it
  // says why not); only for the result it is optional.
  if (hp.eval_split_name != "validation" &&
      (hp.eval_every_n_iters > 0 || datasets::has_split(dataset, hp.eval_split_name))) {
    splits.push_back(hp.eval_split_name);
  }
  if (hp.result_format == "smac" && (splits.empty() || splits.front() != "validation")) {
    throw ConfigError(hp.where("result_format") +
                      ": result_format=smac reports 1 - validation accuracy, and dataset " +
                      hp.dataset_name +
                      " has no validation split: set validation_fraction (e.g. 0.1) to "
                      "hold one out of the training records");
  }
  return splits;
}

std::string format_result(const std::string& format, const RunResult& result) {
  const EvalResult* validation = nullptr;
  for (const auto& split_eval : result.evals) {
    if (split_eval.split == "validation") validation = &split_eval;
  }
  const bool ok = result.exit_code == kExitOk;
  char buf[512];
  if (format == "smac") {
    const double quality = ok && validation ? 1 - validation->top1 : 1.0;
    std::snprintf(buf, sizeof buf, "Result of this algorithm run: %s, %.3f, %lld, %.6f, %lld\n",
                  ok ? "SAT" : "UNSAT", result.wall_secs, static_cast<long long>(result.final_step),
                  quality, static_cast<long long>(result.seed));
    return buf;
  }
  if (format != "tsv") return "";
  const char* status = ok                                  ? "ok"
                       : result.exit_code == kExitDiverged ? "diverged"
                       : result.exit_code == kExitSigint || result.exit_code == kExitSigterm
                           ? "stopped"
                           : "failed";
  std::string out;
  auto row = [&](const std::string& name, const std::string& value) {
    out += name + "\t" + value + "\n";
  };
  auto real = [&](double number) {
    std::snprintf(buf, sizeof buf, "%.6g", number);
    return std::string(buf);
  };
  row("status", status);
  row("exit_code", std::to_string(result.exit_code));
  row("runtime_secs", real(result.wall_secs));
  row("final_step", std::to_string(result.final_step));
  row("seed", std::to_string(result.seed));
  row("train_loss", real(result.train_loss));
  for (const auto& split_eval : result.evals) {
    row(split_eval.split + "_accuracy", real(split_eval.top1));
    row(split_eval.split + "_recall_5", real(split_eval.top5));
    row(split_eval.split + "_loss", real(split_eval.loss));
    row(split_eval.split + "_samples", std::to_string(split_eval.samples));
  }
  return out;
}

void print_result(const HParams& hp, const RunResult& r) {
  static std::atomic<bool> printed{false};
  if (hp.result_format == "none" || printed.exchange(true)) return;
  std::cout << format_result(hp.result_format, r) << std::flush;
}

std::unique_ptr<Hook> make_run_report_hook(PipelineStatsFn stats) {
  return std::make_unique<RunReportHook>(std::move(stats));
}

std::unique_ptr<Hook> make_metrics_hook(PipelineStatsFn stats, const LossScaler& scaler,
                                        const EvaluationHook* eval) {
  return std::make_unique<MetricsHook>(std::move(stats), scaler, eval);
}

}  // namespace fastnn::train
