#include "src/train/builder.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "fastnn/errors.h"
#include "preprocessing/preprocessing_factory.h"
#include "src/log/log.h"
#include "src/train/checkpoint.h"

namespace fastnn::train {

namespace {

// The classes the network predicts: num_classes, or the dataset's after
// labels_offset.
int64_t resolve_num_classes(const HParams& hp, const datasets::DatasetInfo& dataset) {
  const int64_t dataset_classes = dataset.num_classes - hp.labels_offset;
  if (dataset.num_classes > 0 && dataset_classes < 1 && !dataset.synthetic) {
    throw ConfigError(hp.where("labels_offset") + ": labels_offset: " +
                      std::to_string(hp.labels_offset) + " leaves none of " + dataset.name + "'s " +
                      std::to_string(dataset.num_classes) + " classes (labels are 0.." +
                      std::to_string(dataset.num_classes - 1) + " before the offset)");
  }
  if (!hp.num_classes) return dataset_classes;
  if (*hp.num_classes < dataset_classes && !dataset.synthetic) {
    throw ConfigError(hp.where("num_classes") + ": num_classes: " +
                      std::to_string(*hp.num_classes) + " is smaller than " + dataset.name + "'s " +
                      std::to_string(dataset_classes) + " classes (after labels_offset)");
  }
  return *hp.num_classes;
}

// The preprocessing's name (the network's own unless preprocessing_name is
// set; TF-slim's factory also accepts a network name) and the image shape,
// both checked.
void resolve_preprocessing(const HParams& hp, ModelAndData& built) {
  built.preprocessing_name =
      hp.preprocessing_name.empty() ? built.spec->preprocessing : hp.preprocessing_name;
  for (const auto& name : models::model_names()) {
    if (name == built.preprocessing_name) {
      built.preprocessing_name = models::find_model(name).preprocessing;
    }
  }
  // TF-slim's use_grayscale: images decoded to luma, a 1-channel network.
  if (hp.use_grayscale) built.dataset.channels = 1;
  const int64_t size = hp.train_image_size.value_or(built.spec->default_image_size);
  built.shape = {built.dataset.channels, static_cast<int>(size), static_cast<int>(size)};
  try {
    preprocessing::get_preprocessing(built.preprocessing_name, built.shape, true);
  } catch (const ConfigError& e) {
    throw ConfigError(hp.where("preprocessing_name") + ": " + e.what());
  }
  if (size != built.spec->default_image_size && built.spec->fixed_image_size) {
    throw ConfigError(hp.where("train_image_size") + ": train_image_size: " + hp.model_name +
                      " takes " + std::to_string(built.spec->default_image_size) + "x" +
                      std::to_string(built.spec->default_image_size) + " images only");
  }
}

// The network itself. A num_classes (or image size) too large to allocate
// is the configuration's fault, not an internal error.
void create_model(const HParams& hp, ModelAndData& built) {
  models::ModelOptions options;
  options.num_classes = built.num_classes;
  options.in_channels = built.dataset.channels;
  options.image_size = built.shape.height;
  options.fused_kernels = hp.fused_kernels;
  options.dropout_keep_prob = hp.dropout_keep_prob.value_or(built.spec->dropout_keep_prob);
  try {
    built.model = built.spec->create(options);
  } catch (const std::bad_alloc&) {
    throw ConfigError(hp.where("num_classes") + ": num_classes: " +
                      std::to_string(built.num_classes) + ": the model does not fit in memory");
  } catch (const c10::Error& e) {
    if (std::string(e.what()).find("allocate") == std::string::npos) throw;
    throw ConfigError(hp.where("num_classes") + ": num_classes: " +
                      std::to_string(built.num_classes) + ": the model does not fit in memory (" +
                      std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
}

}  // namespace

ModelAndData build(const HParams& hp, const std::string& split, bool create) {
  ModelAndData built;
  try {
    built.spec = &models::find_model(hp.model_name);
  } catch (const ConfigError& e) {
    throw ConfigError(hp.where("model_name") + ": " + e.what());
  }
  try {
    built.dataset = datasets::get_dataset(dataset_options(hp), split);
  } catch (const ConfigError& e) {
    throw ConfigError(hp.where("dataset_name") + ": " + e.what());
  }
  built.num_classes = resolve_num_classes(hp, built.dataset);
  resolve_preprocessing(hp, built);
  if (create) create_model(hp, built);
  return built;
}

datasets::PipelineOptions pipeline_options(const HParams& hp, const ModelAndData& built,
                                           bool is_training, Shard shard) {
  datasets::PipelineOptions options;
  options.files = built.dataset.files;
  options.file_labels = built.dataset.file_labels;
  options.records_per_file = built.dataset.records_per_file;
  options.holdout_fraction = built.dataset.holdout.fraction;
  options.holdout_seed = built.dataset.holdout.seed;
  options.holdout_keep = built.dataset.holdout.keep;
  if (built.dataset.synthetic) options.synthetic_samples = built.dataset.num_samples;
  options.is_training = is_training;
  options.batch_size = is_training ? hp.batch_size : hp.eval_batch_size;
  options.num_epochs = hp.num_epochs;
  options.shuffle_buffer_size = hp.shuffle_buffer_size;
  options.prefetch_batches = hp.prefetch_buffer_size;
  options.num_threads =
      static_cast<int>(std::clamp<int64_t>(hp.num_preprocessing_threads, 1, 1 << 16));
  options.num_parallel_batches = hp.num_parallel_batches;
  // Evaluation passes once; the evaluations during training keep their
  // batches (EvalCache).
  options.cache = hp.datasets_use_caching && is_training;
  options.skip_corrupt = hp.skip_corrupt_records;
  options.max_skipped_share = hp.max_skipped_share;
  options.max_record_bytes = hp.max_record_bytes;
  options.max_image_pixels = hp.max_image_pixels;
  options.seed = static_cast<uint64_t>(hp.seed);
  options.channels = built.dataset.channels;
  options.num_classes = built.num_classes;
  options.labels_offset = hp.labels_offset;
  options.shape = built.shape;
  preprocessing::PreprocessOptions preprocess;
  preprocess.fast_jpeg_decode = hp.fast_jpeg_decode;
  preprocess.augment.policy = hp.augment_policy;
  preprocess.augment.randaugment_num_ops = static_cast<int>(hp.randaugment_num_ops);
  preprocess.augment.randaugment_magnitude = static_cast<int>(hp.randaugment_magnitude);
  preprocess.augment.random_erasing_prob = hp.random_erasing_prob;
  options.preprocess = preprocessing::get_preprocessing(built.preprocessing_name, built.shape,
                                                        is_training, preprocess);
  if (options.cache) {
    options.preprocess_decoded = preprocessing::get_decoded_preprocessing(
        built.preprocessing_name, built.shape, is_training, preprocess);
  }
  if (is_training) {
    options.shard_index = shard.index;
    options.num_shards = shard.count;
  }
  return options;
}

datasets::DatasetOptions dataset_options(const HParams& hp) {
  datasets::DatasetOptions options;
  options.name = hp.dataset_name;
  options.dir = hp.dataset_dir;
  options.train_files = hp.train_files;
  options.eval_files = hp.eval_files;
  options.train_split = hp.dataset_split_name;
  options.eval_split = hp.eval_split_name;
  options.num_classes = hp.num_classes;
  options.labels_offset = hp.labels_offset;
  options.validation_fraction = hp.validation_fraction;
  options.validation_split_seed = hp.validation_split_seed;
  for (const char* key : {"dataset_name", "dataset_dir", "train_files", "eval_files",
                          "dataset_split_name", "eval_split_name", "num_classes", "labels_offset",
                          "validation_fraction", "validation_split_seed"}) {
    if (const auto it = hp.sources.find(key); it != hp.sources.end()) {
      options.sources.emplace(it->first, it->second);
    }
  }
  return options;
}

DeviceOptions device_options(const HParams& hp) {
  DeviceOptions o;
  o.device = hp.device;
  o.use_fp16 = hp.use_fp16;
  o.mixed_precision = hp.mixed_precision;
  o.cudnn_benchmark = hp.cudnn_benchmark;
  o.nproc_per_node_given = hp.sources.count("nproc_per_node") > 0;
  o.device_where = hp.where("device");
  o.mixed_precision_where = hp.where("mixed_precision");
  return o;
}

void apply_data_format(const HParams& hp, models::ClassifierImpl& model) {
  if (hp.data_format != "NHWC") return;
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : model.buffers()) {
    if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

torch::Tensor to_data_format(const HParams& hp, const torch::Tensor& images) {
  return to_data_format(hp.data_format == "NHWC", images);
}

torch::Tensor to_data_format(bool channels_last, const torch::Tensor& images) {
  if (!channels_last || images.dim() != 4) return images;
  return images.contiguous(at::MemoryFormat::ChannelsLast);
}

optim::OptimizerOptions optimizer_options(const HParams& hp) {
  optim::OptimizerOptions o;
  o.name = hp.optimizer;
  o.name_where = hp.where("optimizer");
  o.adadelta.rho = hp.adadelta_rho;
  o.adadelta.epsilon = hp.opt_epsilon;
  o.adagrad.initial_accumulator_value = hp.adagrad_initial_accumulator_value;
  o.adam.beta1 = hp.adam_beta1;
  o.adam.beta2 = hp.adam_beta2;
  o.adam.epsilon = hp.opt_epsilon;
  o.ftrl.learning_rate_power = hp.ftrl_learning_rate_power;
  o.ftrl.initial_accumulator_value = hp.ftrl_initial_accumulator_value;
  o.ftrl.l1 = hp.ftrl_l1;
  o.ftrl.l2 = hp.ftrl_l2;
  o.momentum.momentum = hp.momentum;
  o.rmsprop.decay = hp.rmsprop_decay;
  o.rmsprop.momentum = hp.rmsprop_momentum;
  o.rmsprop.epsilon = hp.opt_epsilon;
  // BERT's optimizer shares Adam's keys.
  o.adam_weight_decay.beta1 = hp.adam_beta1;
  o.adam_weight_decay.beta2 = hp.adam_beta2;
  o.adam_weight_decay.epsilon = hp.opt_epsilon;
  return o;
}

int64_t resolve_stop_at_step(const HParams& hp, int64_t samples_per_worker) {
  if (!stop_from_num_epochs(hp)) return hp.stop_at_step;
  const int64_t steps = optim::epochs_to_steps(static_cast<double>(hp.num_epochs),
                                               samples_per_worker, hp.images_per_step());
  if (steps <= 0) {
    throw ConfigError(hp.where("num_epochs") + ": num_epochs: " + std::to_string(hp.num_epochs) +
                      " epochs of " + std::to_string(samples_per_worker) +
                      " samples per worker in steps of " + std::to_string(hp.images_per_step()) +
                      " images make no step; set stop_at_step");
  }
  return steps;
}

optim::ScheduleOptions schedule_options(const HParams& hp, int64_t samples_per_epoch,
                                        int64_t num_workers) {
  using optim::epochs_to_steps;
  optim::ScheduleOptions options;
  options.type = hp.learning_rate_decay_type;
  options.learning_rate = hp.learning_rate;
  options.end_learning_rate = hp.end_learning_rate;
  options.decay_factor = hp.learning_rate_decay_factor;
  const int64_t global_batch = hp.images_per_step() * std::max<int64_t>(1, num_workers);
  if (hp.warmup_scheme == "t2t" || hp.warmup_scheme == "linear") {
    options.warmup = hp.warmup_scheme;
    options.warmup_steps = hp.warmup_epochs
                               ? epochs_to_steps(*hp.warmup_epochs, samples_per_epoch, global_batch)
                               : hp.warmup_steps;
  }
  options.total_steps = hp.stop_at_step;
  options.alpha = hp.min_lr_ratio;
  if (options.type == "cosine" && options.total_steps <= options.warmup_steps) {
    throw ConfigError(hp.where("learning_rate_decay_type") +
                      ": learning_rate_decay_type: 'cosine' needs a horizon (" +
                      std::to_string(options.total_steps) + " steps, from " +
                      (stop_from_num_epochs(hp) ? "num_epochs" : "stop_at_step") +
                      ") beyond the warmup (" + std::to_string(options.warmup_steps) + " steps)");
  }
  const int64_t stop = hp.stop_at_step;
  if (hp.num_epochs_per_decay) {
    options.decay_start = 0;
    options.decay_steps =
        epochs_to_steps(*hp.num_epochs_per_decay, samples_per_epoch, global_batch);
    if (options.decay_steps <= 0 && options.type != "fixed" && options.type != "cosine") {
      throw ConfigError(hp.where("num_epochs_per_decay") +
                        ": num_epochs_per_decay: gives decay_steps = 0 "
                        "(samples per epoch too small for the batch size)");
    }
  } else if (hp.decay_scheme == "luong5" || hp.decay_scheme == "luong10") {
    options.decay_start = stop / 2;
    options.decay_steps = (stop - options.decay_start) / (hp.decay_scheme == "luong5" ? 5 : 10);
  } else if (hp.decay_scheme == "luong234") {
    options.decay_start = stop * 2 / 3;
    options.decay_steps = (stop - options.decay_start) / 4;
  } else {
    options.decay_start = stop;
    options.decay_steps = 0;
  }
  return options;
}

LossScaleOptions loss_scale_options(const HParams& hp, bool fp16_autocast) {
  LossScaleOptions o;
  o.dynamic = hp.loss_scaling == "dynamic" || (hp.loss_scaling == "auto" && fp16_autocast);
  if (o.dynamic) {
    // An explicit loss_scale is the dynamic policy's starting point.
    if (hp.sources.count("loss_scale")) o.initial_scale = hp.loss_scale;
  } else {
    o.initial_scale = hp.loss_scale;
  }
  return o;
}

EvalOptions eval_options(const HParams& hp, const ModelAndData& built) {
  EvalOptions o;
  o.pipeline = pipeline_options(hp, built, /*is_training=*/false);
  o.channels_last = hp.data_format == "NHWC";
  o.moving_averages = moving_averages_of(hp);
  return o;
}

EvalLoopOptions eval_loop_options(const HParams& hp) {
  EvalLoopOptions o;
  o.interval_secs = hp.eval_interval_secs;
  o.timeout_secs = hp.eval_timeout_secs;
  o.summary_dir = hp.eval_dir;
  return o;
}

EvalResult evaluate_checkpoint(const HParams& given, const std::string& checkpoint_path) {
  // TF-slim's eval preprocesses at eval_image_size, else the network's
  // default size.
  HParams hp = given;
  if (given.eval_image_size) {
    for (const auto& name : models::model_names()) {
      if (name == given.model_name) {
        check_fixed_image_size(models::find_model(name), *given.eval_image_size, "eval_image_size");
      }
    }
    hp.train_image_size = given.eval_image_size;
    hp.sources["train_image_size"] = given.where("eval_image_size") + ", as eval_image_size";
  }
  const std::string path = resolve_checkpoint(checkpoint_path);
  const ModelAndData built = build(hp, hp.eval_split_name);
  check_image_size(*built.model, *built.spec, built.shape.channels, built.shape.height,
                   given.eval_image_size ? "eval_image_size" : "train_image_size");
  apply_data_format(hp, *built.model);
  EvalOptions options = eval_options(hp, built);
  options.max_batches = hp.max_num_batches.value_or(0);
  return evaluate(options, device_options(hp), built, path);
}

InferenceOptions inference_options(const HParams& hp) {
  // TF-slim's default network (inception_resnet_v2) is a training default;
  // a checkpoint's network is never guessed.
  if (hp.where("model_name") == "default") {
    throw ConfigError(
        "model_name: not set: name the network the checkpoint holds (--model_name=NAME, e.g. "
        "lenet or mobilenet_v1)");
  }
  return {/*model_name=*/hp.model_name,
          /*checkpoint_path=*/hp.checkpoint_path,
          /*num_classes=*/hp.num_classes,
          /*image_size=*/hp.eval_image_size,
          /*use_grayscale=*/hp.use_grayscale,
          /*moving_averages=*/moving_averages_of(hp)};
}

MovingAverages moving_averages_of(const HParams& hp) {
  if (hp.moving_average_decay) return MovingAverages::kUse;
  return hp.where("moving_average_decay") == "default" ? MovingAverages::kAuto
                                                       : MovingAverages::kRaw;
}

DistributedStepOptions distributed_step_options(const HParams& hp) {
  return {/*batch_size=*/hp.batch_size,
          /*accumulation_steps=*/hp.gradient_accumulation_steps,
          /*stop_at_step=*/hp.stop_at_step,
          /*tensor_fusion_max_bytes=*/hp.tensor_fusion_max_bytes};
}

}  // namespace fastnn::train
