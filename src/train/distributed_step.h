// The trainer's distributed parts, kept out of the loop: joining the job,
// making every replica start equal, averaging gradients during backward,
// pooling BatchNorm statistics, and agreeing on loss, accuracy and when to
// stop. Exists only when world_size > 1.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "fastnn/hparams.h"
#include "src/dist/cluster.h"

namespace fastnn::dist {
class Collective;
class GradientReducer;
}  // namespace fastnn::dist

namespace fastnn::train {

class BatchNormPool;

/// What the workers agreed on after a step.
struct CombinedStep {
  /// Sample-weighted means over every worker's batch.
  double loss = 0;
  double accuracy = 0;
  /// Images of this step over all workers (batch × workers).
  int64_t samples = 0;
  /// Stop after this step: some worker was asked to (a graceful stop or a
  /// signal); every worker sees the same answer at the same step.
  bool stop = false;
  /// The exit code the stop carries: 143 / 130 when any worker got
  /// SIGTERM / SIGINT (in that order), else 0.
  int exit_code = 0;
  std::string stop_reason;
};

/// Why this worker wants to stop, sent with the step's metrics.
struct LocalStop {
  bool requested = false;  // graceful stop from the job
  int signal = 0;          // SIGINT / SIGTERM received here, or 0
};

class DistributedStep {
 public:
  /// Joins the job through the coordinator (WorkerSession: rendezvous
  /// bounded by worker_timeout_secs), connects the collective engine
  /// through its store (Gloo for the CPU, NCCL for a CUDA `device`), and
  /// builds the gradient buckets of `trainable` (registration order; on
  /// `device` already).
  DistributedStep(const HParams& hp, const dist::ClusterSpec& spec, const torch::Device& device,
                  torch::nn::Module& model, std::vector<torch::Tensor> trainable);
  ~DistributedStep();

  int rank() const;
  int world_size() const;
  const dist::ClusterSpec& spec() const { return spec_; }

  /// Measures BatchNorm counts for exact pooling (see BatchNormPool).
  void measure_batch_norm(const std::function<void(const torch::Tensor&)>& forward,
                          std::vector<int64_t> image_chw);
  /// Overwrites `state` with rank 0's values everywhere (weights, BN
  /// statistics, optimizer slots, EMA; `counters` e.g. global step).
  void broadcast_from_chief(const std::vector<torch::Tensor>& state,
                            const std::string& what);

  /// Before backward: arms the gradient hooks.
  void before_backward(int64_t step);
  /// After backward: gradients averaged, BN statistics pooled, metrics and
  /// stop requests combined. `correct` counts top-1 hits in `samples`.
  CombinedStep after_backward(double loss, int64_t correct, int64_t samples,
                              const LocalStop& stop);
  /// A bounded all-worker barrier (end of training).
  void barrier(const std::string& what);
  /// Tells the coordinator this worker is done (rank 0 waits, bounded, for
  /// the others before its coordinator stops).
  void finish(int exit_code);

 private:
  CombinedStep combine(double loss, int64_t correct, int64_t samples, const LocalStop& stop);
  void report(const CombinedStep& c);

  dist::ClusterSpec spec_;
  int64_t batch_size_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::train
