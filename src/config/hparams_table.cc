// The one table of hyperparameter keys. Adding a key: a field with its default
// in include/fastnn/hparams.h, a row here, a line in docs/hyperparameters.md.
#include "src/config/hparams_table.h"

#include <algorithm>
#include <type_traits>

#include "src/config/value_parse.h"

namespace fastnn::config {

// Keeps the key name and the field in one token, so they cannot drift apart.
#define FASTNN_KEY(name) #name, &HParams::name

namespace {

using G = Group;

// Dataset: what to read and in which batches.
void add_dataset_source_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(dataset_name), G::kDataset,
     "Dataset to read: mock (synthetic images, no I/O), mnist, "
     "fashion_mnist, cifar10, flowers, imagenet, tfrecord (any TF-slim-style "
     "TFRecords: train_files/eval_files and num_classes) or image_folder (a "
     "folder of class sub-folders of JPEG/PNG files, read directly)."},
    {FASTNN_KEY(dataset_dir), G::kDataset,
     "Directory holding the TFRecord shards and labels.txt."},
    {FASTNN_KEY(dataset_split_name), G::kDataset,
     "Split to train on, e.g. train."},
    {FASTNN_KEY(eval_split_name), G::kDataset,
     "Split to evaluate on, e.g. test or validation."},
    {FASTNN_KEY(train_files), G::kDataset,
     "Comma-separated TFRecord files or globs, relative to dataset_dir, "
     "used instead of the dataset's own file list for training."},
    {FASTNN_KEY(eval_files), G::kDataset,
     "Like train_files, for evaluation."},
    {FASTNN_KEY(num_sample_per_epoch), G::kDataset,
     "Training images per epoch for TF-slim decay steps "
     "(num_epochs_per_decay); when not set, the split's size from the "
     "dataset is used. FastNN ignored it.", at_least(1)},
    {FASTNN_KEY(eval_batch_size), G::kDataset,
     "Images per evaluation batch.", at_least(1)},
  });
  // clang-format on
}

// Dataset: the records accepted, the validation split, ignored keys.
void add_dataset_record_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(skip_corrupt_records), G::kDataset,
     "Skip (and count) records that cannot be parsed or decoded instead of "
     "stopping with exit code 3."},
    {FASTNN_KEY(max_skipped_share), G::kDataset,
     "With skip_corrupt_records=True: share of a TFRecord file's bytes that "
     "may be skipped as corrupt (checked at the file's end), and share of "
     "the records read that may be rejected, of any kind (corrupt, bad "
     "example, image or label; checked at the end of the input or of "
     "training and, after the first 10000 records, after every batch); more "
     "stops the run with "
     "exit code 3. 1: never stop. Rejecting every record read is exit "
     "code 3 whatever the share.", between(0, 1)},
    {FASTNN_KEY(max_record_bytes), G::kDataset,
     "Longest TFRecord record (or image_folder image file) accepted, in "
     "bytes; a longer one is corrupt data (exit code 3, or skipped and "
     "counted with skip_corrupt_records=True), never a large allocation.",
     at_least(1)},
    {FASTNN_KEY(max_image_pixels), G::kDataset,
     "Largest image accepted, width x height as its header declares it, "
     "checked before decoding; a larger one is a bad image (exit code 3, or "
     "skipped and counted).", between(1, 268435456)},
    {FASTNN_KEY(validation_fraction), G::kDataset,
     "Share of the training records held out as split 'validation' (the "
     "rest is 'train'), record by record by a seeded hash, for every "
     "dataset. A dataset without a test split (flowers, imagenet) then "
     "serves its own validation files as 'test'. None: 0.1 for "
     "image_folder, nothing held out of TFRecord datasets.",
     between(0, 1, false, true), {}, 0, "image_folder 0.1, TFRecords 0"},
    {FASTNN_KEY(validation_split_seed), G::kDataset,
     "Seed of the deterministic train/validation split; separate from seed "
     "so that every run holds out the same records."},
    {FASTNN_KEY(file_pattern), G::kDataset,
     "Unused in FastNN as well; use train_files.", {}, {}, kIgnored},
    {FASTNN_KEY(reader), G::kDataset,
     "FastNN passed it along without using it.", {}, {}, kIgnored},
  });
  // clang-format on
}

// Preprocessing: image sizes, threads, buffers, cache, decoding.
void add_preprocessing_pipeline_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(preprocessing_name), G::kPreprocessing,
     "Preprocessing: inception, vgg, cifarnet, lenet or a model name; "
     "None: the one that belongs to model_name."},
    {FASTNN_KEY(train_image_size), G::kPreprocessing,
     "Side of the square training images; None: the model's default size.",
     at_least(1), {}, 0, "the model's size"},
    {FASTNN_KEY(eval_image_size), G::kPreprocessing,
     "Side of the square evaluation images; None: the model's default size.",
     at_least(1), {}, 0, "the model's size"},
    {FASTNN_KEY(num_preprocessing_threads), G::kPreprocessing,
     "Threads that decode and preprocess images (fewer, with a warning, "
     "under a process limit such as ulimit -u).", at_least(1)},
    {FASTNN_KEY(shuffle_buffer_size), G::kPreprocessing,
     "Records held in the shuffle buffer.", at_least(1)},
    {FASTNN_KEY(prefetch_buffer_size), G::kPreprocessing,
     "Batches prepared ahead of the training step (their images must also "
     "fit in half the memory).", between(0, 10000)},
    {FASTNN_KEY(num_parallel_batches), G::kPreprocessing,
     "Batches assembled in parallel.", between(1, 10000)},
    {FASTNN_KEY(datasets_use_caching), G::kPreprocessing,
     "Keep each training image in memory after its first read, decoded "
     "(uint8, before the random part of the preprocessing), so later epochs "
     "read and decode nothing; inception then decodes whole images (as "
     "fast_jpeg_decode=False). A cache estimated over half the memory is "
     "refused (exit 2) with its size."},
    {FASTNN_KEY(fast_jpeg_decode), G::kPreprocessing,
     "Let inception preprocessing decode only the crop it needs, at the "
     "smallest libjpeg DCT scale (n/8) that keeps it at least the output "
     "size; False decodes the full image first (docs/io.md)."},
  });
  // clang-format on
}

// Preprocessing: labels, channels and augmentation.
void add_preprocessing_transform_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(labels_offset), G::kPreprocessing,
     "Subtracted from every label, e.g. 1 for files whose class 0 is a "
     "background class.", at_least(0)},
    {FASTNN_KEY(use_grayscale), G::kPreprocessing,
     "TF-slim's use_grayscale: decode every image to one channel (luma) and "
     "build the network for 1-channel input, as TF-slim's grayscale "
     "checkpoints expect."},
    {FASTNN_KEY(augment_policy), G::kPreprocessing,
     "Training augmentation policy, torchvision's: autoaugment_imagenet "
     "(AutoAugment, ImageNet policy), randaugment (RandAugment, 31 magnitude "
     "bins), trivialaugment (TrivialAugmentWide, 31 bins); nearest "
     "interpolation, fill 0. Runs on the image rounded to uint8 right after "
     "the preprocessing's random crop and flip (lenet: on the decoded "
     "image). none: TF-slim's preprocessing unchanged.",
     {}, {"none", "autoaugment_imagenet", "randaugment", "trivialaugment"}},
    {FASTNN_KEY(randaugment_num_ops), G::kPreprocessing,
     "With augment_policy=randaugment: ops applied to each image "
     "(torchvision's num_ops).", between(0, 100)},
    {FASTNN_KEY(randaugment_magnitude), G::kPreprocessing,
     "With augment_policy=randaugment: the magnitude bin, of 31, of every "
     "op (torchvision's magnitude).", between(0, 30)},
    {FASTNN_KEY(random_erasing_prob), G::kPreprocessing,
     "Probability that a training image gets one rectangle of its network "
     "input (after normalization) set to 0: torchvision's RandomErasing "
     "with scale (0.02, 0.33), ratio (0.3, 3.3), value 0.", between(0, 1)},
  });
  // clang-format on
}

// Model: the network, its checkpoints and the batch.
void add_model_setup_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(model_name), G::kModel,
     "Network, by its TF-slim name: lenet, cifarnet, inception_v3, "
     "resnet_v1_50, mobilenet_v2, ..."},
    {FASTNN_KEY(num_classes), G::kModel,
     "Number of output classes. None: the dataset's class count.",
     at_least(1), {}, 0, "from the dataset; FastNN: 100"},
    {FASTNN_KEY(task_type), G::kModel,
     "pretrain: start from fresh weights; finetune: first restore the "
     "trainable variables of model_dir/ckpt_file_name (or checkpoint_path).",
     {}, {"pretrain", "finetune"}},
    {FASTNN_KEY(model_dir), G::kModel,
     "Directory of the checkpoint that task_type=finetune starts from."},
    {FASTNN_KEY(ckpt_file_name), G::kModel,
     "Checkpoint inside model_dir, e.g. model.ckpt-1000."},
    {FASTNN_KEY(checkpoint_path), G::kModel,
     "Checkpoint (or a directory: its latest) to initialize from when "
     "train_dir holds none yet."},
    {FASTNN_KEY(checkpoint_exclude_scopes), G::kModel,
     "Comma-separated variable-name prefixes not restored from "
     "checkpoint_path, e.g. InceptionV3/Logits,InceptionV3/AuxLogits."},
    {FASTNN_KEY(trainable_scopes), G::kModel,
     "Comma-separated variable-name prefixes to train; None: all."},
    {FASTNN_KEY(ignore_missing_vars), G::kModel,
     "Skip variables that checkpoint_path lacks instead of failing."},
    {FASTNN_KEY(batch_size), G::kModel,
     "Images per training batch on each device.", at_least(1)},
  });
  // clang-format on
}

// Model: steps, regularization, mixing, clipping, seed.
void add_model_training_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(gradient_accumulation_steps), G::kModel,
     "Micro-batches of batch_size whose gradients are summed before one "
     "optimizer step (the all-reduce runs once, after the last): each "
     "worker's step sees batch_size x this images. global_step, schedules, "
     "num_epochs and checkpoints count optimizer steps.", at_least(1)},
    {FASTNN_KEY(num_epochs), G::kModel,
     "Passes over the training data; training ends when they are used up "
     "or at stop_at_step, whichever comes first. Set without stop_at_step, "
     "num_epochs alone ends the run: stop_at_step becomes the step where "
     "the input ends (num_epochs x samples / (batch_size x workers)), which "
     "is also the schedule's horizon.", at_least(1)},
    {FASTNN_KEY(weight_decay), G::kModel,
     "L2 scale: the loss gains weight_decay * sum(w^2) / 2 over the "
     "regularized weights.", at_least(0)},
    {FASTNN_KEY(label_smoothing), G::kModel,
     "Targets become onehot * (1 - x) + x / num_classes.",
     between(0, 1, false, true)},
    {FASTNN_KEY(mixup_alpha), G::kModel,
     "Mixup (timm's Mixup, batch mode): each training batch becomes "
     "lambda * x + (1 - lambda) * x flipped along the batch, lambda ~ "
     "Beta(alpha, alpha) once per batch, the targets mixed alike (after "
     "label_smoothing); training accuracy counts the dominant label. "
     "0: off.", at_least(0)},
    {FASTNN_KEY(cutmix_alpha), G::kModel,
     "Cutmix (timm's, batch mode): a box of area share 1 - lambda, lambda ~ "
     "Beta(alpha, alpha), takes the flipped batch's pixels; lambda is then "
     "the share kept. 0: off.", at_least(0)},
    {FASTNN_KEY(mixup_prob), G::kModel,
     "With mixup_alpha or cutmix_alpha > 0: probability that a batch is "
     "mixed at all.", between(0, 1)},
    {FASTNN_KEY(mixup_switch_prob), G::kModel,
     "With both mixup_alpha and cutmix_alpha > 0: probability that a mixed "
     "batch uses cutmix rather than mixup.", between(0, 1)},
    {FASTNN_KEY(dropout_keep_prob), G::kModel,
     "Probability of keeping a unit in the network's dropout layers while "
     "training (TF-slim's dropout_keep_prob argument); 1 turns dropout "
     "off. None: the network's own default.",
     between(0, 1, true, false), {}, 0, "the network's (TF-slim's)"},
    {FASTNN_KEY(max_gradient_norm), G::kModel,
     "Clip the gradients to this global L2 norm; None: no clipping.",
     above(0), {}, 0, "no clipping"},
    {FASTNN_KEY(seed), G::kModel,
     "Seed for weight initialization, shuffling and augmentation."},
  });
  // clang-format on
}

// Learning rate.
void add_learning_rate_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(learning_rate_decay_type), G::kLearningRate,
     "Schedule shape; fixed ignores warmup.",
     {}, {"fixed", "exponential", "polynomial", "cosine"}},
    {FASTNN_KEY(learning_rate), G::kLearningRate,
     "Initial (peak) learning rate.", at_least(0)},
    {FASTNN_KEY(end_learning_rate), G::kLearningRate,
     "Final learning rate of the polynomial schedule.", at_least(0)},
    {FASTNN_KEY(learning_rate_decay_factor), G::kLearningRate,
     "Multiplier per exponential decay step (the luong schemes use it "
     "too).", between(0, 1, true, false)},
    {FASTNN_KEY(warmup_steps), G::kLearningRate,
     "Warmup steps at the start of training.", at_least(0)},
    {FASTNN_KEY(warmup_epochs), G::kLearningRate,
     "Warmup length in epochs instead of steps: "
     "int(samples_per_epoch * this / (batch_size * workers)) steps, as "
     "num_epochs_per_decay counts. None: warmup_steps. Excludes a "
     "warmup_steps above 0.", above(0), {}, 0, "warmup_steps"},
    {FASTNN_KEY(warmup_scheme), G::kLearningRate,
     "t2t: rise exponentially from learning_rate/100 over the warmup; "
     "linear (Goyal et al.): step s < W gets (s + 1) / W of the schedule's "
     "rate, so the first step gets 1/W of it; none or '': no warmup.",
     {}, {"t2t", "linear", "none", ""}},
    {FASTNN_KEY(decay_scheme), G::kLearningRate,
     "Decay start and step count, relative to stop_at_step: '': no decay; "
     "luong234: from 2/3, 4 decays; luong5, luong10: from 1/2, 5 or 10 "
     "decays.", {}, {"", "luong234", "luong5", "luong10"}},
    {FASTNN_KEY(num_epochs_per_decay), G::kLearningRate,
     "TF-slim decay: one decay every samples_per_epoch * this / "
     "(batch_size * workers) steps. None: decay_scheme decides.",
     above(0), {}, 0, "decay_scheme decides"},
    {FASTNN_KEY(min_lr_ratio), G::kLearningRate,
     "Floor of the cosine schedule, as a fraction of learning_rate.",
     between(0, 1)},
  });
  // clang-format on
}

// Optimizer.
void add_optimizer_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    // No choices here: the optimizer factory (src/optim/optimizers.cc) holds
    // the one list of names and reports an unknown one with its location.
    {FASTNN_KEY(optimizer), G::kOptimizer,
     "Update rule, as TensorFlow 1 computes it. The names are listed under "
     "'Optimizer names' in docs/hyperparameters.md; an unknown name is "
     "reported with the list before training starts."},
    {FASTNN_KEY(opt_epsilon), G::kOptimizer,
     "Epsilon of adadelta, adam, rmsprop and adamweightdecay. FastNN's 1.0 "
     "is very large for adam; 1e-8 is the usual value.", above(0)},
    {FASTNN_KEY(adadelta_rho), G::kOptimizer,
     "Adadelta decay rate.", between(0, 1)},
    {FASTNN_KEY(adagrad_initial_accumulator_value), G::kOptimizer,
     "Starting value of the Adagrad accumulators.", above(0)},
    {FASTNN_KEY(adam_beta1), G::kOptimizer,
     "Decay of the first moment (adam, adamweightdecay).",
     between(0, 1, false, true)},
    {FASTNN_KEY(adam_beta2), G::kOptimizer,
     "Decay of the second moment (adam, adamweightdecay).",
     between(0, 1, false, true)},
    {FASTNN_KEY(ftrl_learning_rate_power), G::kOptimizer,
     "FTRL learning-rate power.", at_most(0)},
    {FASTNN_KEY(ftrl_initial_accumulator_value), G::kOptimizer,
     "Starting value of the FTRL accumulators.", at_least(0)},
    {FASTNN_KEY(ftrl_l1), G::kOptimizer,
     "FTRL L1 regularization strength.", at_least(0)},
    {FASTNN_KEY(ftrl_l2), G::kOptimizer,
     "FTRL L2 regularization strength.", at_least(0)},
    {FASTNN_KEY(momentum), G::kOptimizer,
     "Momentum of the momentum optimizer; rmsprop does not use it.",
     between(0, 1)},
    {FASTNN_KEY(rmsprop_momentum), G::kOptimizer,
     "RMSProp momentum.", between(0, 1)},
    {FASTNN_KEY(rmsprop_decay), G::kOptimizer,
     "RMSProp decay of the mean squared gradient (which starts at 1, as in "
     "TF1).", between(0, 1)},
    {FASTNN_KEY(moving_average_decay), G::kOptimizer,
     "Keep an exponential moving average of the weights with this decay; "
     "None: off.", between(0, 1), {}, 0, "off"},
  });
  // clang-format on
}

// Log: stopping, logging, profiling, summaries.
void add_log_progress_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(stop_at_step), G::kLog,
     "Stop when the global step reaches this absolute value (by "
     "StopAtStepHook: with hooks= that leaves it out, a warning and no stop). "
     "Also the horizon of the cosine schedule and the luong decay schemes. "
     "Not set while num_epochs is: derived from num_epochs.",
     at_least(0)},
    {FASTNN_KEY(log_loss_every_n_iters), G::kLog,
     "Log loss, batch accuracy, learning rate and speed every N steps; "
     "0: off.", at_least(0)},
    {FASTNN_KEY(profile_every_n_iters), G::kLog,
     "Write a Chrome-trace timeline every N steps; 0: off.", at_least(0)},
    {FASTNN_KEY(profile_at_task), G::kLog,
     "task_index of the worker that profiles.", at_least(0)},
    {FASTNN_KEY(print_model_statistics), G::kLog,
     "Print every model variable (TF-slim name, shape, size) and the totals, "
     "as TF-slim's model_analyzer does."},
    {FASTNN_KEY(log_trainable_vars_statistics), G::kLog,
     "Print the trainable variables with shapes and sizes at start."},
    {FASTNN_KEY(log_optimizer_vars_statistics), G::kLog,
     "Print the optimizer's slot variables at start."},
    {FASTNN_KEY(hooks), G::kLog,
     "Comma-separated hooks to run: StopAtStepHook, ProfilerHook, "
     "LoggingTensorHook, CheckpointSaverHook, ..."},
    {FASTNN_KEY(save_summaries_secs), G::kLog,
     "Write TensorBoard summaries every this many seconds; 0: off.",
     at_least(0)},
  });
  // clang-format on
}

// Log: evaluation and results.
void add_log_evaluation_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(eval_every_n_iters), G::kLog,
     "Evaluate on eval_split_name (and on the validation split, when the "
     "dataset has one) every N steps; 0: off. One epoch's steps (e.g. 469 "
     "for Fashion-MNIST in batches of 128) evaluates as often as a "
     "per-epoch loop.", at_least(0)},
    {FASTNN_KEY(stop_at_accuracy), G::kLog,
     "Stop, with a checkpoint, at the first evaluation during training "
     "(eval_every_n_iters) whose eval_split_name top-1 accuracy is at least "
     "this (tf_cnn_benchmarks' stop_at_top_1_accuracy); metrics.json records "
     "the step, the accuracy and the training seconds (evaluation "
     "excluded). None: off. Needs eval_every_n_iters.",
     between(0, 1, true, false)},
    {FASTNN_KEY(early_stopping_patience), G::kLog,
     "End the run (exit code 0, the reason in metrics.json) after this many "
     "evaluations during training without a higher accuracy than the best "
     "so far (the validation split's when the dataset has one, else "
     "eval_split_name's). 0: off. Needs eval_every_n_iters.", at_least(0)},
    {FASTNN_KEY(eval_interval_secs), G::kLog,
     "eval_image_classifier on a train_dir: evaluate each new checkpoint, "
     "checking every this many seconds; 0: evaluate once.", at_least(0)},
    {FASTNN_KEY(eval_dir), G::kLog,
     "eval_image_classifier: the folder of the evaluation's TensorBoard "
     "summaries (TF-slim's eval_dir); empty: train_dir/eval_<split> for the "
     "evaluation loop, none for one evaluation."},
    {FASTNN_KEY(max_num_batches), G::kLog,
     "eval_image_classifier: evaluate at most this many batches of "
     "eval_batch_size (TF-slim's max_num_batches); None: the whole split.",
     at_least(1), {}, 0, "the whole split"},
    {FASTNN_KEY(eval_timeout_secs), G::kLog,
     "Evaluation loop: stop after this many seconds without a new "
     "checkpoint; 0: stop when the training run has ended (finished, "
     "diverged, failed or stopped).",
     at_least(0)},
    {FASTNN_KEY(result_format), G::kLog,
     "Print the run's result on stdout at the end: smac (SMAC's 'Result of "
     "this algorithm run: SAT|UNSAT, runtime, steps, 1 - validation "
     "accuracy, seed' line; needs a validation split), tsv (name<TAB>value "
     "lines) or none. Either evaluates the validation and test splits "
     "when the run ends.", {}, {"none", "smac", "tsv"}},
    {FASTNN_KEY(log_device_placement), G::kLog,
     "TensorFlow op-placement logging.", {}, {}, kIgnored},
  });
  // clang-format on
}

// Performance: precision, device, kernels, synthetic inputs.
void add_performance_device_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(use_fp16), G::kPerformance,
     "Mixed precision: fp16 autocast with fp32 master weights on CUDA, "
     "bf16 autocast on CPUs that support it."},
    {FASTNN_KEY(mixed_precision), G::kPerformance,
     "Half type of use_fp16 on CUDA: fp16 (dynamic loss scaling under "
     "loss_scaling=auto) or bf16 (fp32's exponent range: no loss scaling; "
     "Ampere or newer). CPUs always use bf16.", {}, {"fp16", "bf16"}},
    {FASTNN_KEY(device), G::kPerformance,
     "Where training runs: auto (CUDA when this build and machine have a "
     "GPU, else the CPU), cpu, or cuda (an error without a GPU). Worker "
     "LOCAL_RANK trains on cuda:LOCAL_RANK, or on cuda:0 when the process "
     "sees one GPU (Slurm's --gpus-per-task=1).", {}, {"auto", "cpu", "cuda"}},
    {FASTNN_KEY(cudnn_benchmark), G::kPerformance,
     "Let cuDNN time its convolution algorithms for each new input shape "
     "and keep the fastest (torch.backends.cudnn.benchmark). Off is "
     "PyTorch's default; on pays off when the shapes are fixed, as in "
     "training. CUDA only."},
    {FASTNN_KEY(fused_kernels), G::kPerformance,
     "The project's own CPU kernels: conv -> ReLU -> 2x2 max-pool blocks "
     "and fully connected -> ReLU -> dropout layers with backward passes "
     "that skip the zeros, and one pass for the L2 gradients and the "
     "gradient norm. The same values as LibTorch's operators to float "
     "rounding; false runs those operators (for A/B runs). CPU float32 "
     "only: elsewhere it does nothing."},
    {FASTNN_KEY(synthetic_device_inputs), G::kPerformance,
     "With dataset_name=mock: train on one random batch made on the "
     "training device and reused every step, without the input pipeline "
     "(tf_cnn_benchmarks' use_synthetic_gpu_inputs), to time the step "
     "alone. For benchmarks; off trains on mock images made by the "
     "pipeline's threads."},
  });
  // clang-format on
}

// Performance: loss scaling, layout, threads, ignored keys.
void add_performance_tuning_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(loss_scale), G::kPerformance,
     "Loss multiplier applied before backward for fp16; the gradients are "
     "divided by it again. With dynamic loss scaling: the first scale "
     "(default 2^15).", above(0)},
    {FASTNN_KEY(data_format), G::kPerformance,
     "Memory layout of images, activations and conv weights: NCHW, or NHWC "
     "(channels-last; see docs/performance.md for where it helps). "
     "Checkpoints are the same either way.", {}, {"NCHW", "NHWC"}},
    {FASTNN_KEY(loss_scaling), G::kPerformance,
     "Loss scaling policy: auto (dynamic under fp16 autocast on CUDA, "
     "static otherwise), static (loss_scale), dynamic (skip steps with "
     "Inf/NaN gradients, halve the scale, double it after 2000 good steps).",
     {}, {"auto", "static", "dynamic"}},
    {FASTNN_KEY(intra_op_parallelism_threads), G::kPerformance,
     "Threads for CPU tensor operations; 0: LibTorch's default (fewer, "
     "with a warning, under a process limit such as ulimit -u).",
     at_least(0)},
    {FASTNN_KEY(inter_op_parallelism_threads), G::kPerformance,
     "TensorFlow inter-op thread pool.", {}, {}, kIgnored},
    {FASTNN_KEY(protocol), G::kPerformance,
     "TensorFlow server transport; gradients go through NCCL or Gloo here.",
     {}, {"grpc", "grpc+verbs", "grpc+gdr"}, kIgnored},
    {FASTNN_KEY(colocate_gradients_with_ops), G::kPerformance,
     "TensorFlow graph placement; unused in FastNN as well.",
     {}, {}, kIgnored},
  });
  // clang-format on
}

// Cluster: the processes, all-reduce, rendezvous.
void add_cluster_topology_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(job_name), G::kCluster,
     "Role of this process; chief is task 0 under another name.",
     {}, {"worker", "localhost", "chief"}},
    {FASTNN_KEY(task_index), G::kCluster,
     "Rank of this process in worker_hosts; 0 is the chief.", at_least(0)},
    {FASTNN_KEY(worker_hosts), G::kCluster,
     "Comma-separated host:port of every worker; None: one process, or "
     "the cluster comes from the environment (TF_CONFIG, torchrun, Slurm, "
     "MPI)."},
    {FASTNN_KEY(enable_paisoar), G::kCluster,
     "PAI-Soar replicated training: every worker holds the whole model and "
     "gradients are averaged by all-reduce."},
    {FASTNN_KEY(tensor_fusion_policy), G::kCluster,
     "How gradients are grouped into all-reduce buckets (PAI-Soar name)."},
    {FASTNN_KEY(communication_policy), G::kCluster,
     "All-reduce algorithm (PAI-Soar name); NCCL on CUDA, Gloo on CPU."},
    {FASTNN_KEY(tensor_fusion_max_bytes), G::kCluster,
     "Largest fused all-reduce bucket, in bytes.", at_least(1)},
    {FASTNN_KEY(nproc_per_node), G::kCluster,
     "Worker processes to start on this machine, one per device "
     "(torchrun's convention); each gets RANK, WORLD_SIZE, LOCAL_RANK, "
     "MASTER_ADDR and MASTER_PORT. 1: this process is the worker.",
     at_least(1)},
    {FASTNN_KEY(coordinator_address), G::kCluster,
     "host:port of the chief's gRPC coordinator; None: from the cluster "
     "source (worker_hosts[0], TF_CONFIG, MASTER_ADDR:MASTER_PORT, the "
     "first Slurm node).", {}, {}, 0, "from the cluster source"},
    {FASTNN_KEY(worker_timeout_secs), G::kCluster,
     "Rendezvous deadline and lost-worker bound, in seconds: a worker "
     "silent this long makes every other worker exit 5.", at_least(1)},
  });
  // clang-format on
}

// Cluster: token, TLS, ignored keys.
void add_cluster_security_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(job_token_file), G::kCluster,
     "File holding the job's shared token (every coordinator call carries "
     "it); None: the FASTNN_JOB_TOKEN environment variable."},
    {FASTNN_KEY(tls_cert_file), G::kCluster,
     "PEM certificate the chief's coordinator serves; with tls_key_file "
     "turns TLS on. None: plaintext."},
    {FASTNN_KEY(tls_key_file), G::kCluster,
     "PEM private key of tls_cert_file."},
    {FASTNN_KEY(tls_ca_file), G::kCluster,
     "PEM CA bundle workers verify the coordinator with; setting it turns "
     "TLS on for clients."},
    {FASTNN_KEY(taskId), G::kCluster,
     "PAI platform task id; unused in FastNN as well.", {}, {}, kIgnored},
    {FASTNN_KEY(ps_hosts), G::kCluster,
     "Parameter servers; FastNN never built a ps job.", {}, {}, kIgnored},
    {FASTNN_KEY(worker_count), G::kCluster,
     "Unused in FastNN as well; the count comes from worker_hosts or the "
     "environment.", {}, {}, kIgnored},
    {FASTNN_KEY(ps_count), G::kCluster,
     "Unused in FastNN as well.", {}, {}, kIgnored},
  });
  // clang-format on
}

// I/O.
void add_io_keys(std::vector<KeySpec>& t) {
  // clang-format off
  t.insert(t.end(), {
    {FASTNN_KEY(train_dir), G::kIO,
     "Directory for checkpoints, summaries, timelines, metrics.json and "
     "config.cfg; a run resumes from it. None: nothing is written.",
     {}, {}, 0, "nothing is written"},
    {FASTNN_KEY(output_dir), G::kIO,
     "Directory for profiler timelines when train_dir is None."},
    {FASTNN_KEY(save_checkpoints_steps), G::kIO,
     "Save a checkpoint every N steps; 0: off.", at_least(0)},
    {FASTNN_KEY(save_interval_secs), G::kIO,
     "Save a checkpoint every this many seconds; 0: off.", at_least(0)},
    {FASTNN_KEY(max_to_keep), G::kIO,
     "Newest checkpoints kept in train_dir; 0 keeps all.", at_least(0)},
    {FASTNN_KEY(keep_best_checkpoints), G::kIO,
     "Also keep the N best checkpoints by the accuracy of the evaluations "
     "during training (the validation split's when the dataset has one, "
     "else eval_split_name's), as train_dir/best.ckpt-<step>, listed in "
     "best_checkpoints.json and metrics.json; max_to_keep never removes "
     "them and a resumed run never starts from them. 0: none. Needs "
     "eval_every_n_iters.", at_least(0)},
    {FASTNN_KEY(tables), G::kIO,
     "PAI platform input tables; unused in FastNN as well.",
     {}, {}, kIgnored},
    {FASTNN_KEY(buckets), G::kIO,
     "PAI platform OSS buckets; unused in FastNN as well.", {}, {}, kIgnored},
    {FASTNN_KEY(outputs), G::kIO,
     "PAI platform output tables; unused in FastNN as well.",
     {}, {}, kIgnored},
    {FASTNN_KEY(summaryDir), G::kIO,
     "PAI platform summary directory; summaries go to train_dir.",
     {}, {}, kIgnored},
  });
  // clang-format on
}

// Every key, group by group in display order.
std::vector<KeySpec> build_table() {
  std::vector<KeySpec> t;
  add_dataset_source_keys(t);
  add_dataset_record_keys(t);
  add_preprocessing_pipeline_keys(t);
  add_preprocessing_transform_keys(t);
  add_model_setup_keys(t);
  add_model_training_keys(t);
  add_learning_rate_keys(t);
  add_optimizer_keys(t);
  add_log_progress_keys(t);
  add_log_evaluation_keys(t);
  add_performance_device_keys(t);
  add_performance_tuning_keys(t);
  add_cluster_topology_keys(t);
  add_cluster_security_keys(t);
  add_io_keys(t);
  return t;
}

#undef FASTNN_KEY

const HParams& defaults() {
  static const HParams kDefaults;
  return kDefaults;
}

std::string fmt_bound(double v) {
  std::string s = format_double(v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) {
    s.resize(s.size() - 2);
  }
  return s;
}

// Parses `raw` as an integer (kInt) or a float into `slot`, a plain or
// optional field, which keeps its value unless the status is kOk.
template <bool kInt, typename Slot>
NumberStatus parse_number(const std::string& raw, Slot& slot) {
  NumberStatus status;
  if constexpr (kInt) {
    int64_t parsed = 0;
    status = parse_int(raw, &parsed);
    if (status == NumberStatus::kOk) slot = parsed;
  } else {
    double parsed = 0;
    status = parse_double(raw, &parsed);
    if (status == NumberStatus::kOk) slot = parsed;
  }
  return status;
}

}  // namespace

const std::vector<Group>& all_groups() {
  static const std::vector<Group> kGroups = {G::kDataset,      G::kPreprocessing, G::kModel,
                                             G::kLearningRate, G::kOptimizer,     G::kLog,
                                             G::kPerformance,  G::kCluster,       G::kIO};
  return kGroups;
}

const char* group_title(Group g) {
  switch (g) {
    case G::kDataset:
      return "Dataset";
    case G::kPreprocessing:
      return "Preprocessing";
    case G::kModel:
      return "Model";
    case G::kLearningRate:
      return "Learning rate";
    case G::kOptimizer:
      return "Optimizer";
    case G::kLog:
      return "Log";
    case G::kPerformance:
      return "Performance";
    case G::kCluster:
      return "Cluster";
    case G::kIO:
      return "I/O";
  }
  return "?";
}

bool Range::contains(double v) const {
  if (lo && (lo_open ? !(v > *lo) : !(v >= *lo))) return false;
  if (hi && (hi_open ? !(v < *hi) : !(v <= *hi))) return false;
  return true;
}

std::string Range::describe() const {
  if (lo && hi) {
    return std::string("in ") + (lo_open ? "(" : "[") + fmt_bound(*lo) + ", " + fmt_bound(*hi) +
           (hi_open ? ")" : "]");
  }
  if (lo) return (lo_open ? "> " : ">= ") + fmt_bound(*lo);
  if (hi) return (hi_open ? "< " : "<= ") + fmt_bound(*hi);
  return "";
}

Range at_least(double lo) { return Range{lo, std::nullopt}; }

Range above(double lo) { return Range{lo, std::nullopt, true}; }

Range at_most(double hi) { return Range{std::nullopt, hi}; }

Range between(double lo, double hi, bool lo_open, bool hi_open) {
  return Range{lo, hi, lo_open, hi_open};
}

const std::vector<KeySpec>& key_table() {
  static const std::vector<KeySpec> kTable = build_table();
  return kTable;
}

const KeySpec* find_key(std::string_view name) {
  for (const KeySpec& spec : key_table()) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

const std::vector<Alias>& alias_table() {
  static const std::vector<Alias> kAliases = {
      {"enable_paisora", "enable_paisoar"},             // FastNN README spelling
      {"checkpointDir", "train_dir"},                   // FastNN's flag
      {"max_number_of_steps", "stop_at_step"},          // TF-slim's flag
      {"log_every_n_steps", "log_loss_every_n_iters"},  // TF-slim's flag
  };
  return kAliases;
}

const char* resolve_alias(std::string_view name) {
  for (const Alias& a : alias_table()) {
    if (name == a.alias) return a.canonical;
  }
  return nullptr;
}

std::string type_name(const KeySpec& spec) {
  return std::visit(
      [](auto member) -> std::string {
        using M = decltype(member);
        if constexpr (std::is_same_v<M, int64_t HParams::*>) return "int";
        if constexpr (std::is_same_v<M, double HParams::*>) return "float";
        if constexpr (std::is_same_v<M, bool HParams::*>) return "bool";
        if constexpr (std::is_same_v<M, std::string HParams::*>) return "str";
        if constexpr (std::is_same_v<M, std::optional<int64_t> HParams::*>) {
          return "int or None";
        }
        return "float or None";
      },
      spec.field);
}

std::string assign_value(const KeySpec& spec, std::string_view text, HParams* hp) {
  text = trim(text);
  const bool none = text == "None";  // 'None' in quotes is the string None
  const std::string raw(strip_quotes(text));
  const std::string head = std::string(spec.name) + ": ";
  const std::string shown = none ? "None" : quote_value(raw);
  const std::string example = format_value(spec, defaults());
  return std::visit(
      [&](auto member) -> std::string {
        using M = decltype(member);
        auto& slot = hp->*member;
        if constexpr (std::is_same_v<M, std::string HParams::*>) {
          slot = none ? std::string() : raw;
          return "";
        } else if constexpr (std::is_same_v<M, bool HParams::*>) {
          if (!none && parse_bool(raw, &slot)) return "";
          return head + shown + " is not a boolean (expected True or False)";
        } else {
          constexpr bool kOptional = std::is_same_v<M, std::optional<int64_t> HParams::*> ||
                                     std::is_same_v<M, std::optional<double> HParams::*>;
          constexpr bool kInt = std::is_same_v<M, int64_t HParams::*> ||
                                std::is_same_v<M, std::optional<int64_t> HParams::*>;
          const std::string expected = std::string(kInt ? "an integer" : "a float") +
                                       (kOptional ? " or None" : ", e.g. " + example);
          if (none) {
            if constexpr (kOptional) {
              slot.reset();
              return "";
            }
            return head + "None is not allowed (expected " + expected + ")";
          }
          const NumberStatus status = parse_number<kInt>(raw, slot);
          if (status == NumberStatus::kOk) return "";
          if (status == NumberStatus::kOutOfRange) {
            return head + shown + " is out of range (expected " +
                   (kInt ? "a 64-bit integer" : "a finite float") + ")";
          }
          return head + shown + (kInt ? " is not an integer" : " is not a number") + " (expected " +
                 expected + ")";
        }
      },
      spec.field);
}

std::string format_value(const KeySpec& spec, const HParams& hp) {
  return std::visit(
      [&](auto member) -> std::string {
        using M = decltype(member);
        const auto& v = hp.*member;
        if constexpr (std::is_same_v<M, int64_t HParams::*>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<M, double HParams::*>) {
          return format_double(v);
        } else if constexpr (std::is_same_v<M, bool HParams::*>) {
          return format_bool(v);
        } else if constexpr (std::is_same_v<M, std::string HParams::*>) {
          bool empty_is_choice =
              std::find(spec.choices.begin(), spec.choices.end(), "") != spec.choices.end();
          return v.empty() && !empty_is_choice ? "None" : quote_if_needed(v);
        } else if constexpr (std::is_same_v<M, std::optional<int64_t> HParams::*>) {
          return v ? std::to_string(*v) : "None";
        } else {
          return v ? format_double(*v) : "None";
        }
      },
      spec.field);
}

std::optional<double> numeric_value(const KeySpec& spec, const HParams& hp) {
  return std::visit(
      [&](auto member) -> std::optional<double> {
        using M = decltype(member);
        const auto& v = hp.*member;
        if constexpr (std::is_same_v<M, int64_t HParams::*> ||
                      std::is_same_v<M, double HParams::*>) {
          return static_cast<double>(v);
        } else if constexpr (std::is_same_v<M, std::optional<int64_t> HParams::*> ||
                             std::is_same_v<M, std::optional<double> HParams::*>) {
          if (!v) return std::nullopt;
          return static_cast<double>(*v);
        } else {
          return std::nullopt;
        }
      },
      spec.field);
}

const std::string* string_value(const KeySpec& spec, const HParams& hp) {
  auto* member = std::get_if<std::string HParams::*>(&spec.field);
  return member ? &(hp.**member) : nullptr;
}

bool same_value(const KeySpec& spec, const HParams& a, const HParams& b) {
  return std::visit([&](auto member) { return a.*member == b.*member; }, spec.field);
}

}  // namespace fastnn::config
