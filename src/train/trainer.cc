#include "fastnn/trainer.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <cstdio>
#include <optional>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "fastnn/atomic_file.h"
#include "fastnn/errors.h"
#include "fastnn/hooks.h"
#include "src/optim/learning_rate.h"
#include "src/optim/optimizers.h"
#include "src/train/builder.h"
#include "src/train/checkpoint.h"
#include "src/train/distributed_step.h"
#include "src/train/evaluator.h"
#include "src/train/loss.h"
#include "src/train/loss_scale.h"
#include "src/train/signals.h"

namespace fastnn::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Trainer::Impl : TrainControl {
  HParams hp;
  Built built;
  /// eval_every_n_iters > 0: the evaluation split, sharing built.model.
  std::optional<Built> eval_built;
  std::optional<EvalResult> last_eval;
  std::unique_ptr<optim::Optimizer> optimizer;
  optim::ScheduleOptions schedule;
  std::vector<std::unique_ptr<Hook>> hooks;
  std::unique_ptr<CheckpointManager> checkpoints;
  std::vector<torch::Tensor> regularized;
  std::unique_ptr<LossScaler> scaler;
  /// Fault injection for tests (FASTNN_FAULT_INF_GRAD_STEPS): the steps
  /// whose gradients are overwritten with Inf after backward.
  std::vector<int64_t> inject_inf_grad_steps;
  /// The end of num_epochs in steps (0: unknown).
  int64_t epochs_final_step = 0;
  /// moving_average_decay: (variable, shadow) for every model variable.
  std::vector<std::pair<models::NamedVariable, torch::Tensor>> ema;
  int intra_threads = 1;
  bool bf16 = false;
  /// world_size > 1: the cluster, and from run() on the data plane.
  dist::ClusterSpec cluster;
  std::unique_ptr<DistributedStep> dist;
  int64_t step = 0;
  int64_t batches_consumed = 0;
  bool stop = false;
  std::string stop_reason;

  const HParams& hparams() const override {
    return hp;
  }
  int64_t global_step() const override {
    return step;
  }
  int64_t final_step() const override {
    if (epochs_final_step > 0) return std::min(hp.stop_at_step, epochs_final_step);
    return hp.stop_at_step;
  }
  void request_stop(const std::string& why) override {
    if (!stop) stop_reason = why;
    stop = true;
  }
  std::string save_checkpoint() override;

  TensorMap state();
  void restore(const std::string& path);
  void init_from_checkpoint();
  void update_moving_averages(int64_t step);
  void evaluate_now();
  void start_distributed();
  CombinedStep combine_step(double loss, const torch::Tensor& logits,
                            const torch::Tensor& labels);
};

TensorMap Trainer::Impl::state() {
  TensorMap m;
  for (const auto& v : models::model_variables(*built.model)) {
    m[model_key(v.name)] = v.tensor;
  }
  for (const auto& s : optimizer->slots()) m["optimizer/" + s.name] = s.value;
  for (const auto& [v, shadow] : ema) m[ema_key(v.name)] = shadow;
  m["global_step"] = torch::tensor(step, torch::kInt64);
  m["input/batches_consumed"] = torch::tensor(batches_consumed, torch::kInt64);
  m["loss_scale/scale"] = torch::tensor(scaler->scale(), torch::kFloat64);
  m["loss_scale/good_steps"] = torch::tensor(scaler->good_steps(), torch::kInt64);
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  m["rng/torch_cpu"] = gen.get_state();
  return m;
}

std::string Trainer::Impl::save_checkpoint() {
  if (!checkpoints) return "";
  return checkpoints->save(step, state());
}

void Trainer::Impl::restore(const std::string& path) {
  TensorMap ckpt = load_tensors(path);
  restore_model(*built.model, ckpt, path);
  std::string missing;
  torch::NoGradGuard no_grad;
  for (auto& s : optimizer->slots()) {
    auto it = ckpt.find("optimizer/" + s.name);
    if (it == ckpt.end() || it->second.sizes() != s.value.sizes()) {
      missing += "\n  " + s.name;
    } else {
      s.value.copy_(it->second);
    }
  }
  if (!missing.empty()) {
    throw ConfigError("checkpoint '" + path + "' has no " + optimizer->name() +
                      " slots for (was it written with another optimizer?):" +
                      missing);
  }
  auto get = [&](const std::string& key) -> int64_t {
    auto it = ckpt.find(key);
    if (it == ckpt.end()) throw DataError("checkpoint '" + path + "' lacks " + key);
    return it->second.item<int64_t>();
  };
  for (auto& [v, shadow] : ema) {
    auto it = ckpt.find(ema_key(v.name));
    if (it != ckpt.end() && it->second.sizes() == shadow.sizes()) {
      shadow.copy_(it->second);
    } else {
      shadow.copy_(v.tensor);
    }
  }
  step = get("global_step");
  batches_consumed = get("input/batches_consumed");
  auto ls = ckpt.find("loss_scale/scale");
  auto lg = ckpt.find("loss_scale/good_steps");
  if (ls != ckpt.end() && lg != ckpt.end() && scaler->dynamic()) {
    scaler->restore(ls->second.item<double>(), lg->second.item<int64_t>());
  }
  auto rng = ckpt.find("rng/torch_cpu");
  if (rng != ckpt.end()) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng->second);
  }
}

namespace {

// use_fp16 on CPU: bfloat16 autocast for the forward pass (weights, loss
// and optimizer stay fp32), as torch.autocast("cpu") does.
class CpuAutocast {
 public:
  explicit CpuAutocast(bool on) : on_(on) {
    if (!on_) return;
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(false);
  }

 private:
  bool on_;
};

bool cpu_has_bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}

std::vector<int64_t> steps_from_env(const char* name) {
  std::vector<int64_t> out;
  const char* v = std::getenv(name);
  if (!v) return out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

}  // namespace

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
  const int n = restore_model(*built.model, load_tensors(path), path, o);
  std::cout << "Initialized " << n << " variables from " << path
            << (o.exclude_scopes.empty() ? "" : " (excluded: " + o.exclude_scopes + ")")
            << "\n";
}

void Trainer::Impl::update_moving_averages(int64_t num_updates) {
  if (ema.empty()) return;
  const double d = moving_average_decay_at(*hp.moving_average_decay, num_updates);
  torch::NoGradGuard no_grad;
  for (auto& [v, shadow] : ema) shadow.mul_(d).add_(v.tensor, 1.0 - d);
}

void Trainer::Impl::evaluate_now() {
  last_eval = evaluate_model(hp, *eval_built);
  const auto& r = *last_eval;
  std::printf("eval %s at global_step %lld: accuracy = %.4f, recall_5 = %.4f, "
              "loss = %.4f (%lld samples, %.1f s)\n",
              r.split.c_str(), static_cast<long long>(step), r.top1, r.top5, r.loss,
              static_cast<long long>(r.samples), r.wall_secs);
  std::fflush(stdout);
}

// Joins the job and makes every replica equal to rank 0's (restored or
// initialized) state, global step and input position included.
void Trainer::Impl::start_distributed() {
  std::vector<torch::Tensor> trainable;
  for (const auto& v : optimizer->variables()) trainable.push_back(v.var);
  dist = std::make_unique<DistributedStep>(hp, cluster, *built.model, std::move(trainable));
  dist->measure_batch_norm(
      [this](const torch::Tensor& images) { built.model->forward(images); },
      {built.shape.channels, built.shape.height, built.shape.width});
  std::vector<torch::Tensor> state;
  for (const auto& v : models::model_variables(*built.model)) state.push_back(v.tensor);
  for (const auto& s : optimizer->slots()) state.push_back(s.value);
  for (const auto& [v, shadow] : ema) state.push_back(shadow);
  auto counters = torch::tensor({step, batches_consumed, scaler->good_steps()}, torch::kInt64);
  auto loss_scale = torch::tensor({scaler->scale()}, torch::kFloat64);
  state.push_back(counters);
  state.push_back(loss_scale);
  dist->broadcast_from_chief(state, "rank 0's model, optimizer, EMA and loss-scale state");
  step = counters[0].item<int64_t>();
  batches_consumed = counters[1].item<int64_t>();
  if (scaler->dynamic()) scaler->restore(loss_scale.item<double>(), counters[2].item<int64_t>());
  if (!cluster.is_chief()) {
    std::cout << "distributed: starting from rank 0's state at global_step " << step << "\n";
  }
}

CombinedStep Trainer::Impl::combine_step(double loss, const torch::Tensor& logits,
                                         const torch::Tensor& labels) {
  LocalStop local;
  local.signal = stop_signal();
  const int64_t correct = logits.argmax(1).eq(labels).sum().item<int64_t>();
  return dist->after_backward(loss, correct, labels.size(0), local);
}

Trainer::Trainer(HParams hp) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.hp = std::move(hp);
  m.cluster = DistributedStep::cluster(m.hp);
  // Only rank 0 writes train_dir (checkpoints, summaries, metrics.json,
  // config.cfg); the others receive its state when training starts.
  if (!m.cluster.is_chief()) m.hp.train_dir.clear();
  // Only the worker profile_at_task writes timelines (FastNN's meaning).
  if (m.cluster.rank != m.hp.profile_at_task) m.hp.profile_every_n_iters = 0;
  const HParams& h = m.hp;
  torch::manual_seed(static_cast<uint64_t>(h.seed));
  m.intra_threads = configure_threads(h);
  m.built = build(h, h.dataset_split_name);
  apply_data_format(h, *m.built.model);
  std::vector<optim::Variable> vars;
  for (const auto& v : models::model_variables(*m.built.model)) {
    if (!v.trainable) continue;
    if (in_scopes(v.name, h.trainable_scopes)) {
      vars.push_back({v.name, v.tensor});
    } else {
      v.tensor.requires_grad_(false);
    }
  }
  if (vars.empty()) {
    throw ConfigError(h.where("trainable_scopes") + ": trainable_scopes: '" +
                      h.trainable_scopes + "' matches no variable of " +
                      m.built.model->scope());
  }
  m.optimizer = optim::create_optimizer(h, std::move(vars));
  const int64_t samples_per_epoch = h.sources.count("num_sample_per_epoch")
                                        ? h.num_sample_per_epoch
                                        : m.built.dataset.num_samples;
  m.schedule = optim::schedule_from_hparams(h, samples_per_epoch, m.cluster.world_size);
  m.hooks = make_hooks(h);
  // LibTorch's CPU autocast is bfloat16, which has fp32's exponent range:
  // half-precision autocast (and so "auto" dynamic scaling) is CUDA only.
  m.scaler = std::make_unique<LossScaler>(loss_scale_options(h, /*fp16_autocast=*/false));
  m.inject_inf_grad_steps = steps_from_env("FASTNN_FAULT_INF_GRAD_STEPS");
  if (m.built.dataset.num_samples > 0 && h.num_epochs > 0) {
    m.epochs_final_step = h.num_epochs * (m.built.dataset.num_samples / h.batch_size);
  }
  if (h.eval_every_n_iters > 0) {
    m.eval_built = build(h, h.eval_split_name, /*create_model=*/false);
    m.eval_built->model = m.built.model;
    m.eval_built->num_classes = m.built.num_classes;
  }
  if (h.weight_decay > 0) m.regularized = m.built.model->regularized_weights();
  if (!h.train_dir.empty()) {
    m.checkpoints = std::make_unique<CheckpointManager>(h.train_dir, h.max_to_keep);
  }
  pipeline_options(h, m.built, true);  // resolves the preprocessing name
}

Trainer::~Trainer() = default;

std::string Trainer::describe() const {
  const Impl& m = *impl_;
  std::ostringstream os;
  os << format_hparams(m.hp) << "\n";
  os << "# dataset: " << m.built.dataset.name << " split "
     << m.built.dataset.split << ", " << m.built.dataset.num_samples
     << " samples, " << m.built.dataset.files.size() << " file(s), "
     << m.built.num_classes << " classes\n";
  os << "# preprocessing: " << m.built.preprocessing_name << " "
     << m.built.shape.channels << "x" << m.built.shape.height << "x"
     << m.built.shape.width << "\n";
  os << "# model: " << models::describe_model(*m.built.model) << "\n";
  if (m.hp.print_model_statistics) {
    os << models::model_statistics_table(*m.built.model);
  }
  os << "# optimizer: " << m.optimizer->name() << ", "
     << m.optimizer->slots().size() << " slot tensors\n";
  os << "# threads: " << m.intra_threads << " intra-op, "
     << m.hp.num_preprocessing_threads << " preprocessing\n";
  return os.str();
}

int Trainer::run() {
  Impl& m = *impl_;
  const HParams& h = m.hp;
  if (h.use_fp16) {
    m.bf16 = cpu_has_bf16();
    if (m.bf16) {
      std::cout << "use_fp16=True: bfloat16 autocast on CPU (fp32 weights)\n";
    } else {
      std::cerr << "warning: use_fp16=True but this CPU has no bfloat16 "
                   "instructions (AVX512_BF16); training in fp32\n";
    }
  }
  if (m.checkpoints) {
    io::write_file_atomic((fs::path(h.train_dir) / "config.cfg").string(),
                          format_hparams(h));
  }
  const auto latest = m.checkpoints ? m.checkpoints->latest() : std::nullopt;
  if (!latest) m.init_from_checkpoint();
  if (h.moving_average_decay) {
    for (const auto& v : models::model_variables(*m.built.model)) {
      m.ema.push_back({v, v.tensor.detach().clone()});
    }
  }
  if (latest) {
    if (!h.checkpoint_path.empty() || h.task_type == "finetune") {
      std::cout << "train_dir has a checkpoint: resuming from it; the "
                   "fine-tuning source is not used\n";
    }
    m.restore(*latest);
    std::cout << "Restored " << *latest << " (global_step " << m.step << ")\n";
  }
  if (m.cluster.distributed()) m.start_distributed();
  if (!m.checkpoints && m.cluster.is_chief()) {
    std::cerr << "warning: train_dir is not set: no checkpoints, no "
                 "config.cfg, no metrics.json\n";
  }
  if (h.print_model_statistics) {
    std::cout << models::model_statistics_table(*m.built.model);
  }
  if (h.log_trainable_vars_statistics) {
    int64_t total = 0;
    for (const auto& v : m.optimizer->variables()) {
      std::cout << "trainable " << v.name << " " << v.var.sizes() << "\n";
      total += v.var.numel();
    }
    std::cout << "trainable variables: " << m.optimizer->variables().size()
              << " tensors, " << total << " parameters\n";
  }
  if (h.log_optimizer_vars_statistics) {
    int64_t total = 0;
    for (const auto& s : m.optimizer->slots()) {
      std::cout << "optimizer " << s.name << " " << s.value.sizes() << "\n";
      total += s.value.numel();
    }
    std::cout << "optimizer slots: " << total << " values\n";
  }
  install_stop_signals();

  auto popts = pipeline_options(h, m.built, true);
  popts.skip_batches = m.batches_consumed;
  datasets::Pipeline pipeline(std::move(popts));
  auto& model = *m.built.model;
  model.train();

  const auto t0 = Clock::now();
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const int64_t start_step = m.step;
  int64_t samples = 0;
  double last_loss = 0, last_acc = 0, data_secs = 0;
  for (auto& hook : m.hooks) hook->begin(m);
  int exit_code = kExitOk;
  while (!m.stop) {
    // Distributed: a signal travels with the step's metrics instead, so
    // every worker stops after the same step.
    if (int sig = m.dist ? 0 : stop_signal()) {
      exit_code = sig == SIGINT ? kExitSigint : kExitSigterm;
      m.request_stop(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
      break;
    }
    StepStats s;
    s.spans.input_begin = now();
    auto batch = pipeline.next();
    s.spans.input_end = now();
    data_secs += s.spans.input_end - s.spans.input_begin;
    if (!batch) {
      m.request_stop("input exhausted after num_epochs=" + std::to_string(h.num_epochs));
      break;
    }
    s.learning_rate = optim::learning_rate_at(m.schedule, m.step);
    // ProfilerHook's operator-level detail: LibTorch's profiler around
    // forward, backward and the optimizer of the profiled step only.
    std::optional<std::ostringstream> op_trace;
    std::optional<torch::autograd::profiler::RecordProfile> op_profile;
    if (profiles_step(h, m.step + 1)) op_profile.emplace(op_trace.emplace());
    models::ModelOutput out;
    {
      CpuAutocast autocast(m.bf16);
      model.set_global_step(m.step);
      out = model.forward(to_data_format(h, batch->images));
    }
    out.logits = out.logits.to(torch::kFloat32);
    if (out.aux_logits.defined()) out.aux_logits = out.aux_logits.to(torch::kFloat32);
    auto loss = classification_loss(out.logits, batch->labels, h.label_smoothing);
    if (out.aux_logits.defined()) {
      loss = loss + 0.4 * classification_loss(out.aux_logits, batch->labels,
                                              h.label_smoothing);
    }
    s.spans.forward_end = now();
    // None, not zeros: backward's result becomes .grad without a zeroing
    // pass and an addition. On one process a variable no gradient reaches
    // is then left alone by the optimizer, as in TF; across workers it gets
    // the average, which is zero when no worker reached it.
    model.zero_grad(/*set_to_none=*/true);
    if (m.dist) m.dist->before_backward(m.step);
    s.loss_scale = m.scaler->scale();
    if (s.loss_scale != 1.0) {
      (loss * s.loss_scale).backward();
    } else {
      loss.backward();
    }
    s.loss = loss.item<double>();
    // Distributed: average the data gradients first (still scaled: the
    // average is linear); the L2 term below is the same on every worker
    // (same weights), so it is added after.
    CombinedStep combined;
    if (m.dist) {
      combined = m.combine_step(s.loss, out.logits, batch->labels);
      s.loss = combined.loss;
    }
    const auto& vars = m.optimizer->variables();
    if (s.loss_scale != 1.0) scale_gradients(vars, 1.0 / s.loss_scale);
    if (std::count(m.inject_inf_grad_steps.begin(), m.inject_inf_grad_steps.end(), m.step)) {
      torch::NoGradGuard no_grad;
      vars.front().var.mutable_grad().fill_(std::numeric_limits<float>::infinity());
    }
    if (!m.regularized.empty()) {
      s.loss += apply_l2_regularization(m.regularized, h.weight_decay);
    }
    s.spans.backward_end = now();
    s.gradient_norm = gradient_global_norm(vars);
    s.skipped = !m.scaler->update(std::isfinite(s.gradient_norm));
    if (s.skipped) {
      std::printf("global_step %lld: Inf/NaN gradients at loss scale %g: update "
                  "skipped, loss scale now %g\n",
                  static_cast<long long>(m.step), s.loss_scale, m.scaler->scale());
    } else if (std::isfinite(s.loss) && std::isfinite(s.gradient_norm)) {
      if (h.max_gradient_norm) {
        clip_to_global_norm(vars, s.gradient_norm, *h.max_gradient_norm);
      }
      m.optimizer->step(s.learning_rate);
      m.update_moving_averages(m.step);
    }
    s.spans.optimizer_end = now();
    if (op_profile) {
      op_profile.reset();  // writes the trace
      s.op_trace = op_trace->str();
    }
    ++m.step;
    ++m.batches_consumed;
    s.global_step = m.step;
    s.batch_samples = batch->labels.size(0);
    s.accuracy = out.logits.argmax(1).eq(batch->labels).to(torch::kFloat64).mean().item<double>();
    if (m.dist) {
      s.batch_samples = combined.samples;
      s.accuracy = combined.accuracy;
    }
    samples += s.batch_samples;
    last_loss = s.loss;
    last_acc = s.accuracy;
    for (auto& hook : m.hooks) hook->after_step(m, s);
    if (m.eval_built && m.step % h.eval_every_n_iters == 0) m.evaluate_now();
    if (combined.stop) {
      exit_code = combined.exit_code;
      m.request_stop(combined.stop_reason);
    }
  }
  if (m.eval_built && exit_code == kExitOk && m.step > start_step &&
      m.step % h.eval_every_n_iters != 0) {
    m.evaluate_now();
  }
  std::string last_ckpt;
  if (exit_code != kExitOk) {
    last_ckpt = m.save_checkpoint();
  } else {
    for (auto& hook : m.hooks) hook->end(m);
  }
  const double wall = now();
  const double ips = wall > 0 ? samples / wall : 0;
  std::cout << "Stopped at global_step " << m.step << ": " << m.stop_reason << "; "
            << (m.step - start_step) << " steps in " << wall << " s, " << ips
            << " images/sec, data wait " << (wall > 0 ? 100 * data_secs / wall : 0)
            << "%\n";
  if (!last_ckpt.empty()) std::cout << "Saved " << last_ckpt << "\n";
  const auto stats = pipeline.stats();
  if (stats.records_skipped) std::cout << datasets::describe_skipped(stats) << "\n";
  if (m.checkpoints) {
    nlohmann::json j = {{"final_step", m.step},
                        {"steps_this_run", m.step - start_step},
                        {"loss", last_loss},
                        {"train_accuracy", last_acc},
                        {"images_per_sec", ips},
                        {"wall_secs", wall},
                        {"data_wait_secs", data_secs},
                        {"records_skipped", stats.records_skipped},
                        {"loss_scale", m.scaler->scale()},
                        {"steps_skipped_overflow", m.scaler->skipped_steps()},
                        {"records_skipped_by_kind",
                         {{"crc_mismatch", stats.skipped_crc_mismatch},
                          {"truncated", stats.skipped_truncated},
                          {"bad_example", stats.skipped_bad_example},
                          {"bad_image", stats.skipped_bad_image},
                          {"bad_label", stats.skipped_bad_label}}},
                        {"stop_reason", m.stop_reason},
                        {"eval_accuracy", m.last_eval ? nlohmann::json(m.last_eval->top1)
                                                      : nlohmann::json()},
                        {"eval_recall_5", m.last_eval ? nlohmann::json(m.last_eval->top5)
                                                      : nlohmann::json()},
                        {"exit_status", exit_code}};
    io::write_file_atomic((fs::path(h.train_dir) / "metrics.json").string(),
                          j.dump(2) + "\n");
  }
  if (m.dist) {
    // Lets a user (and the integration test) see that the replicas agree.
    double sum = 0;
    for (const auto& v : models::model_variables(*m.built.model)) {
      sum += v.tensor.to(torch::kFloat64).abs().sum().item<double>();
    }
    std::printf("distributed: rank %d final weights checksum %.12e\n", m.cluster.rank, sum);
    std::fflush(stdout);
    m.dist->finish(exit_code);
  }
  return exit_code;
}

}  // namespace fastnn::train
