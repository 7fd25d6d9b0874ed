// Builds what both training and evaluation need from the hyperparameters:
// the dataset, the network and the input pipeline options. Every name is
// resolved through its factory, so a bad name fails here, before any work.
#pragma once

#include <memory>

#include "datasets/dataset_factory.h"
#include "fastnn/hparams.h"
#include "fastnn/pipeline.h"
#include "models/model_factory.h"
#include "src/train/device.h"

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
/// or evaluation (every record), with configure_threads' decoding threads.
datasets::PipelineOptions pipeline_options(const HParams& hp, const ModelAndData& built,
                                           bool is_training, Shard shard = {});

/// Sets LibTorch's thread counts from the hyperparameters, capped at the
/// machine's cores; returns the intra-op count used. Under a process limit
/// (ulimit -u) that leaves too few threads for them and `pipelines` input
/// pipelines at once, the intra-op count and the decoding threads of
/// pipeline_options are lowered, with a warning; ConfigError when not
/// even one of each can start.
int configure_threads(const HParams& hp, int pipelines = 1);

}  // namespace fastnn::train
