// Hyperparameters: the typed struct every component reads, and the loader
// for FastNN's `key=value` files and `--KEY=VALUE` command lines.
// The key table (types, help, valid values, aliases) lives in
// src/config/hparams_table.cc; the user reference is docs/hyperparameters.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fastnn {

/// Every hyperparameter key, one field each, named exactly like the key.
/// The in-class initializers are the defaults (FastNN's unless noted).
/// Comma lists (worker_hosts, hooks, train_files, scopes) stay strings.
/// A string that FastNN defaults to None is the empty string here.
struct HParams {
  // --- Cluster (FastNN "Machine" and "PAI-Soar" flags) ---
  /// Rank of this process in worker_hosts; 0 is the chief.
  int64_t task_index = 0;
  /// Ignored (PAI platform task id).
  std::string taskId;
  /// Comma-separated host:port of every worker; empty: from the environment.
  std::string worker_hosts;
  /// Ignored (FastNN has no ps job).
  std::string ps_hosts;
  /// Ignored.
  std::optional<int64_t> worker_count;
  /// Ignored.
  std::optional<int64_t> ps_count;
  /// worker, localhost or chief.
  std::string job_name = "worker";
  /// Replicated training with all-reduced gradients (PAI-Soar's mode).
  bool enable_paisoar = true;
  /// Gradient bucketing policy name (PAI-Soar).
  std::string tensor_fusion_policy = "default";
  /// All-reduce algorithm name (PAI-Soar).
  std::string communication_policy = "nccl_fullring";
  /// Largest fused all-reduce bucket, bytes. REQUIRES: >= 1.
  int64_t tensor_fusion_max_bytes = 8388608;
  /// Local worker processes this command starts (the launcher);
  /// 1: this process is the worker. REQUIRES: >= 1.
  int64_t nproc_per_node = 1;
  /// host:port of the chief's coordinator; empty: from the cluster source.
  std::string coordinator_address;
  /// Rendezvous deadline and lost-worker bound, seconds. REQUIRES: >= 1.
  int64_t worker_timeout_secs = 60;
  /// File holding the job's shared token; empty: FASTNN_JOB_TOKEN.
  std::string job_token_file;
  /// TLS for the coordinator: PEM certificate and key (chief), CA (all).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;

  // --- Model (FastNN "Model base", loss, fine-tuning) ---
  /// pretrain or finetune (restore trainable variables first).
  std::string task_type = "pretrain";
  /// TF-slim network name; checked by the model factory.
  std::string model_name = "inception_resnet_v2";
  /// Directory of the checkpoint to fine-tune from.
  std::string model_dir;
  /// Checkpoint file inside model_dir.
  std::string ckpt_file_name;
  /// Output classes; None: the dataset's count (FastNN's default is 100).
  std::optional<int64_t> num_classes;
  /// Passes over the training data. REQUIRES: >= 1. Set without
  /// stop_at_step, it ends the run (stop_from_num_epochs).
  int64_t num_epochs = 100;
  /// L2 scale, loss += wd * sum(w^2) / 2. REQUIRES: >= 0.
  double weight_decay = 4e-5;
  /// Images per batch per device. REQUIRES: >= 1.
  int64_t batch_size = 32;
  /// Micro-batches of batch_size per optimizer step (gradient
  /// accumulation). REQUIRES: >= 1.
  int64_t gradient_accumulation_steps = 1;
  /// Global-norm gradient clipping; None: off.
  std::optional<double> max_gradient_norm;
  /// Label smoothing in [0, 1).
  double label_smoothing = 0.0;
  /// Mixup's Beta(alpha, alpha); 0: off. REQUIRES: >= 0.
  double mixup_alpha = 0.0;
  /// Cutmix's Beta(alpha, alpha); 0: off. REQUIRES: >= 0.
  double cutmix_alpha = 0.0;
  /// Probability that a batch is mixed (mixup or cutmix). In [0, 1].
  double mixup_prob = 1.0;
  /// With both alphas > 0: probability of cutmix over mixup. In [0, 1].
  double mixup_switch_prob = 0.5;
  /// Dropout keep probability while training, in (0, 1]; None: the
  /// network's TF-slim default. 1 turns dropout off.
  std::optional<double> dropout_keep_prob;
  /// Checkpoint (or directory) to initialize from when train_dir has none.
  std::string checkpoint_path;
  /// Comma-separated variable prefixes not restored from checkpoint_path.
  std::string checkpoint_exclude_scopes;
  /// Comma-separated variable prefixes to train; empty: all.
  std::string trainable_scopes;
  /// Skip variables missing from checkpoint_path.
  bool ignore_missing_vars = false;
  /// Seed for initialization, shuffling and augmentation.
  int64_t seed = 0;

  // --- Dataset ---
  /// Dataset name; checked by the dataset factory.
  std::string dataset_name = "mock";
  /// Directory with the TFRecord shards and labels.txt.
  std::string dataset_dir;
  /// Ignored (unused in FastNN).
  std::string file_pattern;
  /// Ignored (unused in FastNN).
  std::string reader;
  /// Images per epoch, for TF-slim decay steps. REQUIRES: >= 1.
  int64_t num_sample_per_epoch = 1000000;
  /// Comma-separated files or globs overriding the training file list.
  std::string train_files;
  /// Comma-separated files or globs overriding the evaluation file list.
  std::string eval_files;
  /// Split to train on.
  std::string dataset_split_name = "train";
  /// Split to evaluate on.
  std::string eval_split_name = "test";
  /// Images per evaluation batch. REQUIRES: >= 1.
  int64_t eval_batch_size = 100;
  /// Skip and count undecodable records instead of failing (exit 3).
  bool skip_corrupt_records = false;
  /// With skip_corrupt_records: a TFRecord file of which more than this share
  /// of the bytes was skipped as corrupt fails the run (exit 3); 1 never
  /// fails. REQUIRES: in [0, 1].
  double max_skipped_share = 0.1;
  /// Largest TFRecord record, or image file of an image_folder, accepted;
  /// a longer one is a corrupt record (exit 3, or skipped and counted).
  /// REQUIRES: >= 1.
  int64_t max_record_bytes = int64_t{64} << 20;
  /// Largest declared image (width x height, from its header, before any
  /// decoding) accepted; a larger one is a bad image (exit 3, or skipped
  /// and counted). REQUIRES: in [1, 2^28].
  int64_t max_image_pixels = 100000000;
  /// Share of the training records held out as split "validation"
  /// (datasets/sharding.h, Holdout, for TFRecord datasets). None: 0.1 for
  /// image_folder; nothing for TFRecord datasets, whose own files then
  /// make every split. REQUIRES: in [0, 1).
  std::optional<double> validation_fraction;
  /// Seed of the train/validation split (kept apart from `seed` so runs
  /// with different seeds share one validation set).
  int64_t validation_split_seed = 0;

  // --- Preprocessing ---
  /// Decode/preprocess threads. REQUIRES: >= 1.
  int64_t num_preprocessing_threads = 16;
  /// Preprocessing name; empty: the one of model_name.
  std::string preprocessing_name;
  /// Shuffle buffer, records. REQUIRES: >= 1.
  int64_t shuffle_buffer_size = 1024;
  /// Batches prepared ahead. REQUIRES: >= 0.
  int64_t prefetch_buffer_size = 32;
  /// Batches assembled in parallel. REQUIRES: >= 1.
  int64_t num_parallel_batches = 8;
  /// Keep raw records in memory after the first pass.
  bool datasets_use_caching = false;
  /// Inception preprocessing decodes only its crop, DCT-downscaled.
  bool fast_jpeg_decode = true;
  /// Subtracted from every label. REQUIRES: >= 0.
  int64_t labels_offset = 0;
  bool use_grayscale = false;
  /// Training image side; None: the model's default size.
  std::optional<int64_t> train_image_size;
  /// Evaluation image side; None: the model's default size.
  std::optional<int64_t> eval_image_size;
  /// Training augmentation policy (torchvision's): none,
  /// autoaugment_imagenet, randaugment, trivialaugment.
  std::string augment_policy = "none";
  /// RandAugment's ops per image. REQUIRES: in [0, 100].
  int64_t randaugment_num_ops = 2;
  /// RandAugment's magnitude bin of 31. REQUIRES: in [0, 30].
  int64_t randaugment_magnitude = 9;
  /// Probability of random erasing per training image. REQUIRES: in [0, 1].
  double random_erasing_prob = 0.0;

  // --- Performance (fp16 + threads) ---
  /// Mixed precision (fp16 autocast on CUDA, bf16 on capable CPUs).
  bool use_fp16 = true;
  /// The half type of use_fp16 on CUDA: fp16 (with loss scaling) or bf16.
  std::string mixed_precision = "fp16";
  /// Where training runs: auto (CUDA when present), cpu, cuda.
  std::string device = "auto";
  /// cuDNN's autotuner (torch.backends.cudnn.benchmark); PyTorch's default
  /// is off.
  bool cudnn_benchmark = false;
  /// The project's own CPU kernels (the fused conv -> ReLU -> 2x2 max-pool
  /// blocks, fully connected -> ReLU -> dropout, the fused gradient pass);
  /// false runs LibTorch's operators instead (A/B runs).
  bool fused_kernels = true;
  /// dataset_name=mock only: one random batch made on the training device
  /// and reused every step, no input pipeline (tf_cnn_benchmarks'
  /// use_synthetic_gpu_inputs): times the step alone.
  bool synthetic_device_inputs = false;
  /// Activation and weight layout on CPU: NCHW (LibTorch's default) or
  /// NHWC (channels-last, oneDNN's preferred layout).
  std::string data_format = "NCHW";
  /// Static loss scale, or the dynamic policy's first scale when set.
  /// REQUIRES: > 0.
  double loss_scale = 1.0;
  /// auto: dynamic with fp16 autocast (CUDA), static otherwise; static;
  /// dynamic (skip the step on Inf/NaN gradients, back off, grow).
  std::string loss_scaling = "auto";
  /// Ignored (TF server transport).
  std::string protocol = "grpc";
  /// Ignored (TF inter-op pool).
  int64_t inter_op_parallelism_threads = 256;
  /// CPU threads for tensor ops; 0: LibTorch's default.
  int64_t intra_op_parallelism_threads = 96;
  /// Ignored (TF graph placement).
  bool colocate_gradients_with_ops = true;

  // --- Learning rate ---
  /// fixed, exponential, polynomial or cosine.
  std::string learning_rate_decay_type = "exponential";
  /// Initial (peak) learning rate. REQUIRES: >= 0.
  double learning_rate = 0.01;
  /// Final rate of the polynomial schedule.
  double end_learning_rate = 1e-4;
  /// Multiplier per decay step, in (0, 1].
  double learning_rate_decay_factor = 0.94;
  /// Warmup length in steps.
  int64_t warmup_steps = 0;
  /// Warmup length in epochs (TF-slim's rounding, like
  /// num_epochs_per_decay); None: warmup_steps. REQUIRES: > 0, and
  /// warmup_steps 0 when set.
  std::optional<double> warmup_epochs;
  /// t2t, linear, none or "".
  std::string warmup_scheme = "t2t";
  /// "", luong234, luong5 or luong10 (relative to stop_at_step).
  std::string decay_scheme;
  /// None: FastNN's decay_scheme rules; set: TF-slim's decay steps.
  std::optional<double> num_epochs_per_decay;
  /// Cosine floor as a fraction of learning_rate.
  double min_lr_ratio = 0.0;

  // --- Optimizer ---
  /// Update rule; optim::optimizer_names() lists the valid names.
  std::string optimizer = "rmsprop";
  /// Adadelta decay.
  double adadelta_rho = 0.95;
  /// Adagrad accumulator start. REQUIRES: > 0.
  double adagrad_initial_accumulator_value = 0.1;
  /// Adam first-moment decay, in [0, 1).
  double adam_beta1 = 0.9;
  /// Adam second-moment decay, in [0, 1).
  double adam_beta2 = 0.999;
  /// Epsilon of adadelta/adam/rmsprop/adamweightdecay. REQUIRES: > 0.
  double opt_epsilon = 1.0;
  /// FTRL learning-rate power. REQUIRES: <= 0.
  double ftrl_learning_rate_power = -0.5;
  /// FTRL accumulator start.
  double ftrl_initial_accumulator_value = 0.1;
  /// FTRL L1 strength.
  double ftrl_l1 = 0.0;
  /// FTRL L2 strength.
  double ftrl_l2 = 0.0;
  /// Momentum of the momentum optimizer.
  double momentum = 0.9;
  /// RMSProp momentum.
  double rmsprop_momentum = 0.9;
  /// RMSProp mean-square decay.
  double rmsprop_decay = 0.9;
  /// Weight EMA decay; None: no EMA.
  std::optional<double> moving_average_decay;

  // --- Log ---
  /// Absolute global step at which training stops.
  int64_t stop_at_step = 100;
  /// Logging period in steps; 0: off.
  int64_t log_loss_every_n_iters = 10;
  /// Profiling period in steps; 0: off.
  int64_t profile_every_n_iters = 0;
  /// task_index of the worker that profiles.
  int64_t profile_at_task = 0;
  /// Ignored (TF op placement logging).
  bool log_device_placement = false;
  /// Print trainable variables at start.
  bool log_trainable_vars_statistics = false;
  /// Print TF-slim's model_analyzer table (name, shape, size) and totals.
  bool print_model_statistics = false;
  /// Print optimizer slot variables at start.
  bool log_optimizer_vars_statistics = false;
  /// Comma-separated hook names; checked by the hook factory.
  std::string hooks = "StopAtStepHook,ProfilerHook,LoggingTensorHook,CheckpointSaverHook";
  /// Summary period in seconds; 0: off.
  int64_t save_summaries_secs = 600;
  /// Evaluation period in steps; 0: off.
  int64_t eval_every_n_iters = 0;
  /// Stop at the first evaluation during training whose eval_split_name
  /// accuracy reaches this; None: off.
  std::optional<double> stop_at_accuracy;
  /// End the run after this many evaluations during training without a
  /// better accuracy; 0: off.
  int64_t early_stopping_patience = 0;
  /// eval_image_classifier: > 0 evaluates each new checkpoint of a
  /// train_dir, polling this often; 0 evaluates once.
  int64_t eval_interval_secs = 0;
  /// Loop mode ends after this long without a new checkpoint; 0: only
  /// when the training run has finished.
  int64_t eval_timeout_secs = 0;
  /// eval_image_classifier's TensorBoard summaries; empty: the loop's
  /// train_dir/eval_<split>, none for one evaluation.
  std::string eval_dir;
  /// eval_image_classifier evaluates at most this many batches; None: all.
  std::optional<int64_t> max_num_batches;
  /// The result printed on stdout at the end of a run: none, smac (SMAC's
  /// "Result of this algorithm run: ..." line) or tsv (name<TAB>value).
  std::string result_format = "none";

  // --- I/O ---
  /// Ignored (PAI platform).
  std::string tables;
  /// Ignored (PAI platform).
  std::string buckets;
  /// Ignored (PAI platform).
  std::string outputs;
  /// Ignored (PAI platform).
  std::string summaryDir;
  /// Profiler output when train_dir is empty.
  std::string output_dir = ".";
  /// Checkpoints, summaries, config.cfg; empty: nothing is written.
  std::string train_dir;
  /// Checkpoint period in steps; 0: off.
  int64_t save_checkpoints_steps = 1000;
  /// Checkpoint period in seconds; 0: off.
  int64_t save_interval_secs = 600;
  /// Checkpoints kept; 0: all.
  int64_t max_to_keep = 5;
  /// Best checkpoints by evaluation accuracy kept as best.ckpt-<step>; 0:
  /// none.
  int64_t keep_best_checkpoints = 0;

  /// Where each key that was set came from: "FILE:LINE" or "command line";
  /// absent = default.
  std::map<std::string, std::string> sources;
  /// sources[key] or "default".
  std::string where(const std::string& key) const;
  /// Images one worker trains on per optimizer step:
  /// batch_size x gradient_accumulation_steps.
  int64_t images_per_step() const { return batch_size * gradient_accumulation_steps; }
};

/// Result of parsing a binary's command line.
struct LoadResult {
  /// The effective, validated hyperparameters.
  HParams hp;
  /// --help / -h was given (nothing else was parsed).
  bool help = false;
  /// --version was given (nothing else was parsed).
  bool version = false;
  /// --dry_run was given.
  bool dry_run = false;
  /// --print_cluster was given.
  bool print_cluster = false;
  /// The --config path; "" when none was given.
  std::string config_path;
  /// Alias uses, duplicate keys, ignored keys set; the caller prints each as
  /// "warning: ...".
  std::vector<std::string> warnings;
  /// Values of the caller's `extra_keys` that were given, by key.
  std::map<std::string, std::string> extras;
};

/// Parses argv: `--config FILE` / `--config=FILE`, `--KEY=VALUE`,
/// `--KEY VALUE`, `--KEY` (bool true), `--noKEY` (bool false), `--help`/`-h`,
/// `--version`, `--dry_run`, `--print_cluster`. The file is applied first,
/// then the command line (command line wins). `extra_keys` are tool-specific
/// flags that are not hparams (they shadow hparams of the same name); their
/// values are returned in `extras`. Throws ConfigError naming the location,
/// key, bad value and what is valid, before any work is done.
LoadResult load_hparams(int argc, const char* const* argv,
                        const std::vector<std::string>& extra_keys = {});

/// Checks value ranges, valid values and cross-key constraints; throws
/// ConfigError (prefixed with the key's source when known). load_hparams
/// calls it; call it again after editing an HParams in code.
void validate(const HParams& hp);

/// Grouped help: usage line, general flags, then every key with its type,
/// default and valid values; ignored keys are marked "(ignored)".
std::string format_help(const std::string& program, const std::string& usage);

/// The configuration as a re-loadable hparams file (grouped, every key, None
/// printed as None); train_dir/config.cfg holds this.
std::string format_hparams(const HParams& hp);

/// Markdown tables of all keys, one per group (docs/hyperparameters.md).
std::string format_hparams_markdown();

/// The known key closest to `key` by edit distance (case-insensitive; an alias
/// counts as its canonical key); "" if none is within distance 3.
std::string closest_key(const std::string& key);

/// Whether num_epochs ends the run and is the schedule's horizon: num_epochs
/// is set and stop_at_step is not (the trainer then derives stop_at_step,
/// train::resolve_stop_at_step). Otherwise stop_at_step, set or FastNN's
/// default of 100, ends the run, as in FastNN.
bool stop_from_num_epochs(const HParams& hp);

}  // namespace fastnn
