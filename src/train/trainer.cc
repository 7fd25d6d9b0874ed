#include "fastnn/trainer.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>

#include "fastnn/errors.h"
#include "fastnn/hooks.h"
#include "src/config/value_parse.h"
#include "src/dist/cluster.h"
#include "src/io/atomic_file.h"
#include "src/log/log.h"
#include "src/optim/learning_rate.h"
#include "src/optim/optimizers.h"
#include "src/train/builder.h"
#include "src/train/checkpoint.h"
#include "src/train/device.h"
#include "src/train/distributed_step.h"
#include "src/train/failpoints.h"
#include "src/train/loss.h"
#include "src/train/loss_scale.h"
#include "src/train/out_of_memory.h"
#include "src/train/process_setup.h"
#include "src/train/run_hooks.h"
#include "src/train/signals.h"
#include "src/train/step.h"
#include "src/train/step_profile.h"
#include "src/train/train_state.h"

namespace fastnn::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// The EvaluationHook is installed: eval_every_n_iters, or a result to print.
bool evaluates_in_training(const HParams& hp) {
  return hp.eval_every_n_iters > 0 || hp.result_format != "none";
}

}  // namespace

struct Trainer::Impl : TrainControl {
  HParams hp;
  dist::ClusterSpec cluster;
  /// A distributed job's session settings (token, timeouts).
  dist::SessionOptions session;
  /// Where this worker trains (choose_device from device_options), and the
  /// forward precision.
  DeviceOptions device_options;
  torch::Device device{torch::kCPU};
  Autocast autocast = Autocast::kOff;
  ModelAndData built;
  std::unique_ptr<optim::Optimizer> optimizer;
  optim::ScheduleOptions schedule;
  std::unique_ptr<LossScaler> scaler;
  /// Rank 0 with a train_dir: checkpoints, config.cfg, summaries, metrics.
  std::unique_ptr<CheckpointManager> checkpoints;
  std::vector<std::unique_ptr<Hook>> hooks;
  /// From run() on: the replica's state, the data plane, the input.
  std::unique_ptr<TrainState> state;
  std::unique_ptr<DistributedStep> dist;
  std::unique_ptr<datasets::Pipeline> pipeline;
  std::unique_ptr<DeviceFeed> feed;
  /// The end of num_epochs in steps (0: unknown).
  int64_t epochs_final_step = 0;
  int intra_threads = 1;
  Clock::time_point t0 = Clock::now();
  /// The oom_at_step failpoint (src/train/failpoints.h).
  std::optional<int64_t> out_of_memory_fault = failpoints::out_of_memory_step();
  bool stop = false;
  std::string stop_reason;
  /// request_job_stop's reason in a distributed run, until the workers
  /// agree on it.
  std::string job_stop_reason;

  const HParams& hparams() const override { return hp; }
  int rank() const override { return cluster.rank; }
  bool writes_train_dir() const override { return checkpoints != nullptr; }
  double now() const override { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  int64_t global_step() const override { return state ? state->step : 0; }
  int64_t final_step() const override {
    if (epochs_final_step > 0) return std::min(hp.stop_at_step, epochs_final_step);
    return hp.stop_at_step;
  }
  void request_stop(const std::string& why) override {
    if (!stop) stop_reason = why;
    stop = true;
  }
  void request_job_stop(const std::string& why) override {
    if (!dist) {
      request_stop(why);
    } else if (job_stop_reason.empty()) {
      job_stop_reason = why;
    }
  }
  std::string save_checkpoint() override {
    if (!checkpoints) return "";
    return checkpoints->save(state->step, state->to_checkpoint());
  }

  std::vector<optim::Variable> trainable_variables() const;
  void resolve_run_length();
  void warn_of_settings_that_do_nothing() const;
  void add_run_hooks();
  void init_from_checkpoint();
  void prepare();
  void restore_or_initialize();
  void open_input();
  void start_distributed();
  StepOptions step_options() const;
  void loop_reporting_failures(Step& step, RunSummary& summary);
  void loop(Step& step, RunSummary& summary);
  bool train_one_step(Step& step, RunSummary& summary, const std::function<double()>& clock,
                      const NextMicroBatch& more);
  void after_step(const StepStats& stats, const CombinedStep& combined, RunSummary& summary);
  void finish(RunSummary& r);
  void report_failure(RunSummary& r, int exit_code, const std::string& why);
  OutOfMemoryError out_of_memory(const c10::OutOfMemoryError& e) const;
};

void Trainer::Impl::add_run_hooks() {
  hooks.push_back(make_statistics_hook(*built.model, *optimizer));
  EvaluationHook* eval = nullptr;
  if (evaluates_in_training(hp)) {
    std::vector<ModelAndData> evals;
    for (const auto& split : evaluation_splits(hp)) {
      ModelAndData e = build(hp, split, /*create_model=*/false);
      e.model = built.model;
      e.num_classes = built.num_classes;
      evals.push_back(std::move(e));
    }
    // Swaps in the moving averages for evaluation (true when it did).
    auto swap = [this] {
      if (!state || !state->has_moving_averages()) return false;
      state->swap_moving_averages();
      return true;
    };
    auto hook = std::make_unique<EvaluationHook>(hp, std::move(evals), swap,
                                                 [this] { return state->to_checkpoint(); });
    eval = hook.get();
    hooks.push_back(std::move(hook));
  }
  PipelineStatsFn stats = [this] {
    return pipeline ? pipeline->stats() : datasets::PipelineStats{};
  };
  hooks.push_back(make_run_report_hook(stats));
  hooks.push_back(make_metrics_hook(stats, *scaler, eval));
  if (const auto span = profile_span_from_env()) hooks.push_back(make_profile_hook(*span, device));
}

void Trainer::Impl::init_from_checkpoint() {
  std::string source = hp.checkpoint_path;
  if (source.empty() && hp.task_type == "finetune") {
    source = (fs::path(hp.model_dir) / hp.ckpt_file_name).string();
  }
  if (source.empty()) return;
  const std::string path = resolve_checkpoint(source);
  RestoreOptions o;
  o.exclude_scopes = hp.checkpoint_exclude_scopes;
  o.ignore_missing = hp.ignore_missing_vars;
  // An exclusion that matches nothing (a typo) and a fine-tune that
  // restores nothing are usage errors, as a trainable_scopes typo is.
  const auto variables = models::model_variables(*built.model);
  for (const auto& scope : split_list(o.exclude_scopes)) {
    if (std::none_of(variables.begin(), variables.end(),
                     [&](const auto& v) { return v.name.rfind(scope, 0) == 0; })) {
      throw ConfigError(hp.where("checkpoint_exclude_scopes") +
                        ": checkpoint_exclude_scopes: " + config::quote_value(scope) +
                        " matches no variable of " + built.model->scope());
    }
  }
  const int n = restore_model(*built.model, load_tensors(path), path, o);
  if (n == 0) {
    throw ConfigError(hp.where("checkpoint_path") + ": checkpoint_path: no variable of " +
                      built.model->scope() + " was restored from " + config::quote_value(path) +
                      (o.exclude_scopes.empty() ? ""
                                                : " (checkpoint_exclude_scopes=" +
                                                      o.exclude_scopes + " excludes them all)") +
                      ": to train from scratch, leave checkpoint_path unset");
  }
  log::chief() << "Initialized " << n << " variables from " << path
               << (o.exclude_scopes.empty() ? "" : " (excluded: " + o.exclude_scopes + ")");
}

// Everything before the first step: config.cfg, the state (restored from
// train_dir, or initialized and then fine-tuned from a checkpoint), the
// job's data plane, and the input pipeline at the state's position.
void Trainer::Impl::prepare() {
  // Only rank 0 writes train_dir; the others receive its state when
  // training starts. Opened here, not in the constructor, so --dry_run
  // neither writes nor locks it.
  if (!hp.train_dir.empty() && cluster.is_chief()) {
    checkpoints = std::make_unique<CheckpointManager>(hp.train_dir, hp.max_to_keep);
  }
  restore_or_initialize();
  if (device.is_cuda()) {
    state->to(device);
    log::info() << "training on " << device.str();
  }
  if (cluster.distributed()) {
    // A peer killed while this rank writes to it (Gloo's TCP pairs) must
    // come back as EPIPE, which the collective reports and the job turns
    // into exit 5 naming the worker; with SIGPIPE's default action this
    // process would die instead (exit 141).
    std::signal(SIGPIPE, SIG_IGN);
    start_distributed();
  }
  if (!checkpoints && cluster.is_chief()) {
    log::warning() << "train_dir is not set: no checkpoints, no config.cfg, no metrics.json";
  }
  install_stop_signals();
  open_input();
  built.model->train();
}

// The state: train_dir's latest checkpoint when there is one (the
// fine-tuning source is then not used), else initialized and fine-tuned;
// then config.cfg beside the checkpoints.
void Trainer::Impl::restore_or_initialize() {
  const auto latest = checkpoints ? checkpoints->latest() : std::nullopt;
  if (!latest) init_from_checkpoint();
  state = std::make_unique<TrainState>(*built.model, *optimizer, *scaler, hp.moving_average_decay);
  if (latest) {
    if (!hp.checkpoint_path.empty() || hp.task_type == "finetune") {
      log::info() << "train_dir has a checkpoint: resuming from it; the "
                     "fine-tuning source is not used";
    }
    state->from_checkpoint(latest->tensors, latest->path);
    log::info() << "Restored " << latest->path << " (global_step " << state->step << ")";
  }
  // Only now, with the directory's checkpoint accepted by this model and
  // optimizer: config.cfg must describe the checkpoints beside it.
  if (checkpoints) {
    io::write_file_atomic((fs::path(hp.train_dir) / "config.cfg").string(), format_hparams(hp));
  }
}

// The feed: the input pipeline at the state's position (this rank's
// shard), or one synthetic batch made on the device.
void Trainer::Impl::open_input() {
  if (hp.synthetic_device_inputs) {
    // No pipeline: one random batch on the device, every step (benchmarks).
    log::chief() << "synthetic_device_inputs: one random batch of " << hp.batch_size << " made on "
                 << device.str() << " and reused every step; no input pipeline";
    feed = make_synthetic_feed(hp.batch_size,
                               {built.shape.channels, built.shape.height, built.shape.width},
                               built.num_classes, device, static_cast<uint64_t>(cluster.rank) + 1);
    return;
  }
  auto options = pipeline_options(hp, built, true, {cluster.rank, cluster.world_size});
  options.skip_batches = state->batches_consumed;
  // A stop signal ends a wait for input that may never end.
  if (!dist) options.stop_requested = [] { return stop_signal() != 0; };
  pipeline = std::make_unique<datasets::Pipeline>(std::move(options));
  feed = make_device_feed(*pipeline, device);
}

// Joins the job and makes every replica equal to rank 0's (restored or
// initialized) state, global step and input position included.
void Trainer::Impl::start_distributed() {
  std::vector<torch::Tensor> trainable;
  for (const auto& v : optimizer->variables()) trainable.push_back(v.var);
  dist = std::make_unique<DistributedStep>(distributed_step_options(hp), cluster, session, device,
                                           *built.model, std::move(trainable));
  dist->measure_batch_norm([this](const torch::Tensor& images) { built.model->forward(images); },
                           {built.shape.channels, built.shape.height, built.shape.width});
  state->broadcast_from_chief([this](const std::vector<torch::Tensor>& tensors) {
    dist->broadcast_from_chief(tensors, "rank 0's model, optimizer, EMA and loss-scale state");
  });
  if (!cluster.is_chief()) {
    log::info() << "distributed: starting from rank 0's state at global_step " << state->step;
  }
}

// After the loop: the checkpoint a signal asks for, or the hooks' end of a
// finished run; then every hook's after_run, and leaving the job.
void Trainer::Impl::finish(RunSummary& r) {
  // The training time: the final checkpoint and evaluation come after it.
  r.wall_secs = now();
  if (r.exit_code != kExitOk) {
    r.saved_checkpoint = save_checkpoint();
    mark_state_saved();
  } else {
    for (auto& hook : hooks) hook->end(*this);
  }
  r.stop_reason = stop_reason;
  r.final_step = state->step;
  for (auto& hook : hooks) hook->after_run(*this, r);
  if (dist) {
    // Lets a user (and the integration test) see that the replicas agree.
    double sum = 0;
    for (const auto& v : models::model_variables(*built.model)) {
      sum += v.tensor.to(torch::kFloat64).abs().sum().item<double>();
    }
    char line[96];
    std::snprintf(line, sizeof line, "distributed: rank %d final weights checksum %.12e",
                  cluster.rank, sum);
    log::info() << line;
    dist->finish(r.exit_code);
  }
}

// A run ended by an exception: no final checkpoint (the state may be bad),
// but the hooks report it, and metrics.json records its exit status.
void Trainer::Impl::report_failure(RunSummary& r, int exit_code, const std::string& why) {
  r.exit_code = exit_code;
  r.stop_reason = why.substr(0, 300);
  r.final_step = state->step;
  r.wall_secs = now();
  for (auto& hook : hooks) hook->after_run(*this, r);
}

// LibTorch's out-of-memory error with the batch size, the step and the
// device (exit 7).
OutOfMemoryError Trainer::Impl::out_of_memory(const c10::OutOfMemoryError& e) const {
  const std::string at_step =
      state ? " (global step " + std::to_string(state->step + 1) + ")" : " (before step 1)";
  return out_of_memory_error(
      e, device, "training at batch_size=" + std::to_string(hp.batch_size) + at_step, "batch_size");
}

// The variables trainable_scopes selects (the others stop requiring
// gradients); none is a configuration error.
std::vector<optim::Variable> Trainer::Impl::trainable_variables() const {
  std::vector<optim::Variable> variables;
  for (const auto& variable : models::model_variables(*built.model)) {
    if (!variable.trainable) continue;
    if (in_scopes(variable.name, hp.trainable_scopes)) {
      variables.push_back({variable.name, variable.tensor});
    } else {
      variable.tensor.requires_grad_(false);
    }
  }
  if (variables.empty()) {
    throw ConfigError(hp.where("trainable_scopes") +
                      ": trainable_scopes: " + config::quote_value(hp.trainable_scopes) +
                      " matches no variable of " + built.model->scope());
  }
  return variables;
}

// Where the run ends: the end of num_epochs over this worker's shard, and
// stop_at_step from it when only num_epochs is set.
void Trainer::Impl::resolve_run_length() {
  // A batch larger than this worker's part of the split never fills: a
  // configuration error now, not 0 steps (or an epoch buffered) later.
  // Synthetic data is not sharded: every worker makes all of it.
  const int64_t shard_samples = built.dataset.synthetic
                                    ? built.dataset.num_samples
                                    : built.dataset.num_samples / cluster.world_size;
  if (built.dataset.num_samples > 0 && hp.batch_size > shard_samples) {
    throw ConfigError(hp.where("batch_size") + ": batch_size: " + std::to_string(hp.batch_size) +
                      " is larger than the " + std::to_string(shard_samples) + " samples of " +
                      built.dataset.name + "'s " + built.dataset.split + " split" +
                      (cluster.world_size > 1 ? " per worker" : ""));
  }
  // Where the input ends: batches run on across epoch boundaries.
  epochs_final_step = optim::epochs_to_steps(static_cast<double>(hp.num_epochs), shard_samples,
                                             hp.images_per_step());
  if (!stop_from_num_epochs(hp)) return;
  hp.stop_at_step = resolve_stop_at_step(hp, shard_samples);
  log::chief() << "num_epochs=" << hp.num_epochs << " without stop_at_step: the run ends at step "
               << hp.stop_at_step << " (" << shard_samples << " samples per worker in batches of "
               << hp.batch_size
               << (hp.gradient_accumulation_steps > 1
                       ? " x " + std::to_string(hp.gradient_accumulation_steps) + " micro-batches"
                       : std::string())
               << "), the schedule's horizon";
}

// Settings given that change nothing in this run, each said once, as a
// stop_at_step without StopAtStepHook is.
void Trainer::Impl::warn_of_settings_that_do_nothing() const {
  for (const char* key : {"randaugment_num_ops", "randaugment_magnitude"}) {
    if (hp.sources.count(key) && hp.augment_policy != "randaugment") {
      log::warning() << hp.where(key) << ": " << key
                     << " does nothing: augment_policy=" << hp.augment_policy << " ("
                     << hp.where("augment_policy") << "), not randaugment";
    }
  }
  const int64_t last = final_step();
  if (schedule.warmup_steps > last) {
    log::warning() << hp.where(hp.warmup_epochs ? "warmup_epochs" : "warmup_steps")
                   << ": the warmup (" << schedule.warmup_steps
                   << " steps) is longer than the run (" << last
                   << " steps): the learning rate never reaches learning_rate";
  }
  if (const auto span = profile_span_from_env(); span && span->first > last) {
    log::warning() << "FASTNN_PROFILE_STEPS=" << span->first << ":" << span->last
                   << " starts after the run's last step (" << last << "): nothing is profiled";
  }
}

Trainer::Trainer(HParams hp, const dist::ClusterSpec& cluster,
                 const std::map<std::string, std::string>& environment)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.hp = std::move(hp);
  impl.cluster = cluster;
  if (cluster.distributed()) impl.session = dist::session_options(impl.hp, environment);
  log::set_rank(cluster.rank, cluster.world_size);
  const HParams& hparams = impl.hp;
  impl.device_options = device_options(hparams);
  impl.device = choose_device(impl.device_options, cluster.local_rank);
  prepare_device(impl.device_options, impl.device);
  impl.autocast = choose_autocast(impl.device_options, impl.device);
  torch::manual_seed(static_cast<uint64_t>(hparams.seed));
  keep_freed_memory();
  // Evaluation during training runs a second input pipeline.
  impl.intra_threads = configure_threads(impl.hp, evaluates_in_training(hparams) ? 2 : 1);
  impl.built = build(hparams, hparams.dataset_split_name);
  apply_data_format(hparams, *impl.built.model);
  impl.optimizer = optim::create_optimizer(optimizer_options(hparams), impl.trainable_variables());
  impl.resolve_run_length();
  const int64_t samples_per_epoch = hparams.sources.count("num_sample_per_epoch")
                                        ? hparams.num_sample_per_epoch
                                        : impl.built.dataset.num_samples;
  impl.schedule = schedule_options(hparams, samples_per_epoch, cluster.world_size);
  impl.warn_of_settings_that_do_nothing();
  // bfloat16 has fp32's exponent range: "auto" scales the loss dynamically
  // only under float16 autocast (CUDA).
  impl.scaler = std::make_unique<LossScaler>(
      loss_scale_options(hparams, /*fp16_autocast=*/impl.autocast == Autocast::kCudaFloat16));
  impl.hooks = make_hooks(hparams);
  impl.add_run_hooks();
}

Trainer::~Trainer() = default;

std::string Trainer::describe() const {
  const Impl& m = *impl_;
  std::ostringstream os;
  os << format_hparams(m.hp) << "\n";
  os << "# dataset: " << m.built.dataset.name << " split " << m.built.dataset.split << ", "
     << m.built.dataset.num_samples << " samples, " << m.built.dataset.files.size() << " file(s), "
     << m.built.num_classes << " classes\n";
  os << "# preprocessing: " << m.built.preprocessing_name << " " << m.built.shape.channels << "x"
     << m.built.shape.height << "x" << m.built.shape.width << "\n";
  os << "# model: " << models::describe_model(*m.built.model) << "\n";
  if (m.hp.print_model_statistics) os << models::model_statistics_table(*m.built.model);
  os << "# optimizer: " << m.optimizer->name() << ", " << m.optimizer->slots().size()
     << " slot tensors\n";
  os << "# device: " << m.device.str() << "\n";
  os << "# threads: " << m.intra_threads << " intra-op, " << m.hp.num_preprocessing_threads
     << " preprocessing\n";
  return os.str();
}

// What every step of this run is: the hyperparameters' step keys, the
// autocast chosen for the device, and when the host reads its numbers.
StepOptions Trainer::Impl::step_options() const {
  StepOptions options;
  options.label_smoothing = hp.label_smoothing;
  options.mixup.mixup_alpha = hp.mixup_alpha;
  options.mixup.cutmix_alpha = hp.cutmix_alpha;
  options.mixup.prob = hp.mixup_prob;
  options.mixup.switch_prob = hp.mixup_switch_prob;
  options.mixup.seed = static_cast<uint64_t>(hp.seed);
  options.mixup.rank = cluster.rank;
  options.weight_decay = hp.weight_decay;
  options.fused_kernels = hp.fused_kernels;
  options.max_gradient_norm = hp.max_gradient_norm;
  options.channels_last = hp.data_format == "NHWC";
  options.autocast = autocast;
  options.accumulation_steps = hp.gradient_accumulation_steps;
  options.stop_requested = [this] { return !job_stop_reason.empty(); };
  // One process stops between micro-batches (a pod's grace period is
  // shorter than a long accumulated step); distributed workers stop
  // together, at their agreement steps.
  if (!dist) options.stop_inside_step = [] { return stop_signal() != 0; };
  // The read_on_demand failpoint: a CPU run reads its numbers as a GPU
  // run does, only on the steps the hooks ask for.
  options.read_every_step = !host_reads_synchronise(device) && !failpoints::read_on_demand();
  return options;
}

int Trainer::run() {
  Impl& m = *impl_;
  log_autocast(m.device_options, m.autocast);
  try {
    m.prepare();
  } catch (const c10::OutOfMemoryError& e) {
    throw m.out_of_memory(e);
  }
  Step step(m.step_options(), *m.built.model, *m.optimizer, *m.scaler, *m.state, m.dist.get(),
            failpoints::gradient_fault());
  m.t0 = Clock::now();
  RunSummary summary;
  summary.start_step = m.state->step;
  m.loop_reporting_failures(step, summary);
  m.finish(summary);
  return summary.exit_code;
}

// The loop; a data error, divergence or a lost worker still ends with the
// hooks' after_run (metrics.json carries the exit status), then propagates.
void Trainer::Impl::loop_reporting_failures(Step& step, RunSummary& summary) {
  try {
    loop(step, summary);
    // Too many records rejected is an error also when training stops first.
    if (summary.exit_code == kExitOk && pipeline) pipeline->check_rejected_share();
  } catch (const DataError& e) {
    report_failure(summary, kExitData, e.what());
    throw;
  } catch (const DivergedError& e) {
    report_failure(summary, kExitDiverged, e.what());
    throw;
  } catch (const DistributedError& e) {
    report_failure(summary, kExitDistributed, e.what());
    throw;
  } catch (const c10::OutOfMemoryError& e) {
    // No final checkpoint (as for every error): the ones written stay.
    const OutOfMemoryError error = out_of_memory(e);
    report_failure(summary, kExitOutOfMemory, error.what());
    throw error;
  } catch (const OutOfMemoryError& e) {  // an evaluation's, or the input's staging buffers
    report_failure(summary, kExitOutOfMemory, e.what());
    throw;
  }
}

void Trainer::Impl::loop(Step& step, RunSummary& summary) {
  const std::function<double()> clock = [this] { return now(); };
  // The micro-batches after a step's first (gradient accumulation): their
  // wait is the input's too.
  const NextMicroBatch more = [this, &summary] {
    const double begin = now();
    auto batch = feed->next();
    summary.data_wait_secs += now() - begin;
    return batch;
  };
  for (auto& hook : hooks) hook->begin(*this);
  while (!stop && train_one_step(step, summary, clock, more)) {
  }
  // A GPU run's last steps may have left their numbers on the device: an
  // Inf/NaN among them stops the run here, before the final checkpoint.
  const LastStepMetrics last = step.settle();
  if (last.read) {
    summary.loss = last.loss;
    summary.accuracy = last.accuracy;
  }
}

// One turn of the loop: a stop signal, the hooks around the step, the
// input's next batch and the step. False when the loop must end now.
bool Trainer::Impl::train_one_step(Step& step, RunSummary& summary,
                                   const std::function<double()>& clock,
                                   const NextMicroBatch& more) {
  // Distributed: a signal travels with the step's metrics instead, so
  // every worker stops after the same step.
  if (const int sig = dist ? 0 : stop_signal()) {
    summary.exit_code = sig == SIGINT ? kExitSigint : kExitSigterm;
    request_stop(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
    return false;
  }
  for (auto& hook : hooks) hook->before_step(*this);
  StepStats stats;
  stats.spans.input_begin = now();
  auto batch = feed->next();
  stats.spans.input_end = now();
  summary.data_wait_secs += stats.spans.input_end - stats.spans.input_begin;
  if (!batch) {
    if (!dist && stop_signal()) return true;  // the feed stopped waiting for it
    request_stop("input exhausted after num_epochs=" + std::to_string(hp.num_epochs));
    return false;
  }
  const int64_t next = state->step + 1;
  if (out_of_memory_fault == next) failpoints::throw_out_of_memory(next);
  bool wanted = next == final_step();
  for (const auto& hook : hooks) wanted = wanted || hook->needs_metrics(*this, next);
  CombinedStep combined;
  try {
    combined = step.run(*batch, optim::learning_rate_at(schedule, state->step), clock, stats,
                        wanted, more);
  } catch (const StoppedInsideStep& e) {
    const int sig = stop_signal();
    summary.exit_code = sig == SIGINT ? kExitSigint : kExitSigterm;
    request_stop(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                 " inside an accumulated step (" + std::to_string(e.micro_batches) + " of " +
                 std::to_string(hp.gradient_accumulation_steps) +
                 " micro-batches drawn, not applied; a resumed run draws them again)");
    return false;
  } catch (const InputEndedInsideStep& e) {
    request_stop("input exhausted after num_epochs=" + std::to_string(hp.num_epochs) + " (" +
                 std::to_string(e.micro_batches) +
                 " micro-batch(es) of the last step, fewer than gradient_accumulation_steps=" +
                 std::to_string(hp.gradient_accumulation_steps) + ", not applied)");
    return false;
  }
  after_step(stats, combined, summary);
  return true;
}

// The step's numbers into the run's summary, the hooks' after_step, and a
// stop the step's metrics carry (divergence, a signal, a worker's request).
void Trainer::Impl::after_step(const StepStats& stats, const CombinedStep& combined,
                               RunSummary& summary) {
  summary.samples += stats.batch_samples;
  if (stats.metrics_read) {
    summary.loss = stats.loss;
    summary.accuracy = stats.accuracy;
  }
  for (auto& hook : hooks) hook->after_step(*this, stats);
  if (combined.stop) {
    summary.exit_code = combined.exit_code;
    request_stop(combined.exit_code == kExitOk && !job_stop_reason.empty() ? job_stop_reason
                                                                           : combined.stop_reason);
  }
}

}  // namespace fastnn::train
