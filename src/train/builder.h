// Builds what both training and evaluation need from the hyperparameters:
// the dataset, the network and the input pipeline options. Every name is
// resolved through its factory, so a bad name fails here, before any work.
// Also the boundary where the hyperparameters become each component's own
// options (device, optimizer, schedule, loss scale, evaluation, inference,
// distributed step): with the tools' main functions, the one place that
// reads HParams; each converter keeps where a key was set for its errors.
#pragma once

#include <memory>
#include <string>

#include "datasets/dataset_factory.h"
#include "fastnn/hparams.h"
#include "fastnn/pipeline.h"
#include "models/model_factory.h"
#include "src/optim/learning_rate.h"
#include "src/optim/optimizers.h"
#include "src/train/device.h"
#include "src/train/distributed_step.h"
#include "src/train/evaluator.h"
#include "src/train/inference_model.h"
#include "src/train/loss_scale.h"

namespace fastnn::train {

struct ModelAndData {
  datasets::DatasetInfo dataset;
  const models::ModelSpec* spec = nullptr;
  std::shared_ptr<models::ClassifierImpl> model;
  std::string preprocessing_name;
  preprocessing::OutputShape shape;
  int64_t num_classes = 0;
};

/// Resolves dataset split `split`, the model and the preprocessing; the
/// model itself is created only when `create_model`.
ModelAndData build(const HParams& hp, const std::string& split, bool create_model = true);

/// data_format=NHWC: converts the model's 4-d parameters and buffers to
/// channels-last in place (values unchanged). No-op for NCHW.
void apply_data_format(const HParams& hp, models::ClassifierImpl& model);

/// The batch in the layout hp.data_format asks for.
torch::Tensor to_data_format(const HParams& hp, const torch::Tensor& images);
/// The batch channels-last when `channels_last` (a 4-d batch only).
torch::Tensor to_data_format(bool channels_last, const torch::Tensor& images);

/// The dataset keys of `hp` (dataset_name, dataset_dir, train_files,
/// eval_files, the split names, num_classes, labels_offset,
/// validation_fraction and its seed), with where each was set for the
/// errors.
datasets::DatasetOptions dataset_options(const HParams& hp);

/// The device keys of `hp` (device, use_fp16, mixed_precision,
/// cudnn_benchmark, whether nproc_per_node was given), with where each was
/// set for the errors.
DeviceOptions device_options(const HParams& hp);

/// This worker's part of the training data: shard `index` of `count`.
struct Shard {
  int index = 0;
  int count = 1;
};

/// Pipeline options for training (shuffle, repeat; `shard` of the data)
/// or evaluation (every record), with hp.num_preprocessing_threads decoding
/// threads (as configure_threads settled them, src/train/process_setup.h).
datasets::PipelineOptions pipeline_options(const HParams& hp, const ModelAndData& built,
                                           bool is_training, Shard shard = {});

/// The optimizer keys of `hp`: optimizer, with where it was set, and the
/// hyperparameters of every row (opt_epsilon, momentum, adam_beta1, ...).
optim::OptimizerOptions optimizer_options(const HParams& hp);

/// The step at which the run ends: hp.stop_at_step, or, when
/// stop_from_num_epochs(hp) (fastnn/hparams.h), the end of num_epochs passes
/// over a worker's `samples_per_worker` in steps of batch_size ×
/// gradient_accumulation_steps images (the input pipeline's own count:
/// batches run on across epoch boundaries). ConfigError (exit 2) when that
/// end is unknown (samples_per_worker <= 0) or is step 0.
int64_t resolve_stop_at_step(const HParams& hp, int64_t samples_per_worker);

/// The schedule keys of `hp`; the horizon (cosine's total_steps, the luong
/// schemes' reference) is hp.stop_at_step, which the trainer has replaced
/// by resolve_stop_at_step's. FastNN semantics (decay_scheme counted from
/// stop_at_step) unless num_epochs_per_decay is set, in which case
/// TF-slim's decay_steps = epochs_to_steps(epochs_per_decay,
/// samples_per_epoch, images_per_step * num_workers) applies from step 0.
/// warmup_epochs converts the same way. ConfigError when cosine's horizon is
/// not beyond the warmup.
optim::ScheduleOptions schedule_options(const HParams& hp, int64_t samples_per_epoch,
                                        int64_t num_workers);

/// Resolves hp.loss_scaling ("auto", "static", "dynamic") and hp.loss_scale:
/// auto is dynamic exactly when `fp16_autocast` (CUDA half precision) is on.
/// An explicit loss_scale is the dynamic policy's starting scale.
LossScaleOptions loss_scale_options(const HParams& hp, bool fp16_autocast);

/// How `built`'s split is evaluated: pipeline_options for evaluation
/// (after configure_threads) and data_format.
EvalOptions eval_options(const HParams& hp, const ModelAndData& built);

/// eval_interval_secs and eval_timeout_secs.
EvalLoopOptions eval_loop_options(const HParams& hp);

/// Evaluates `checkpoint_path` (a file, or a train_dir for its latest) on
/// hp.eval_split_name with hp.eval_batch_size: a network built for it and
/// evaluate()d, on the threads configure_threads set for the process.
EvalResult evaluate_checkpoint(const HParams& hp, const std::string& checkpoint_path);

/// model_name, checkpoint_path, num_classes, eval_image_size and
/// use_grayscale.
InferenceOptions inference_options(const HParams& hp);

/// Which weights an evaluation restores: the moving averages when
/// moving_average_decay is set, the raw weights when it is given as None,
/// else the checkpoint decides (MovingAverages::kAuto).
MovingAverages moving_averages_of(const HParams& hp);

/// batch_size, gradient_accumulation_steps, stop_at_step (resolved) and
/// tensor_fusion_max_bytes.
DistributedStepOptions distributed_step_options(const HParams& hp);

}  // namespace fastnn::train
