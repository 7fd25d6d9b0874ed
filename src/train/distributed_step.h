// The trainer's distributed parts, kept out of the loop: joining the job,
// making every replica start equal, averaging gradients during backward,
// pooling BatchNorm statistics, and agreeing on loss, accuracy and when to
// stop. Exists only when world_size > 1.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "src/dist/cluster.h"
#include "src/dist/session.h"

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

/// Slots of the head of a step's numbers that every worker sums (float64,
/// on the training device): Step fills the first three, DistributedStep
/// the stop flags.
enum StepHead : int64_t {
  kLossTimesSamples,
  kCorrect,
  kSamples,
  kStopRequested,
  kSigint,
  kSigterm,
  kStepHeadSize
};

/// Steps between two agreements on stopping when the step's numbers are
/// not read every step (CUDA): every worker reads the summed stop flags at
/// the same global steps (multiples of this, and the last step), so a stop
/// asked of any worker ends every worker after the same step, at most this
/// many steps after it was asked.
constexpr int64_t kStopAgreementSteps = 10;

/// What a worker's DistributedStep needs of the run.
struct DistributedStepOptions {
  /// Images per micro-batch on this worker (batch_size).
  int64_t batch_size = 32;
  /// Micro-batches per optimizer step (gradient_accumulation_steps).
  int64_t accumulation_steps = 1;
  /// The run's last step, for the ETA reported to the coordinator.
  int64_t stop_at_step = 0;
  /// The largest gradient bucket all-reduced at once
  /// (tensor_fusion_max_bytes).
  int64_t tensor_fusion_max_bytes = 8388608;
};

class DistributedStep {
 public:
  /// Joins the job through the coordinator (WorkerSession: rendezvous
  /// bounded by worker_timeout_secs), connects the collective engine
  /// through its store (Gloo for the CPU, NCCL for a CUDA `device`), and
  /// builds the gradient buckets of `trainable` (registration order; on
  /// `device` already).
  DistributedStep(const DistributedStepOptions& options, const dist::ClusterSpec& spec,
                  const dist::SessionOptions& session, const torch::Device& device,
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
  void broadcast_from_chief(const std::vector<torch::Tensor>& state, const std::string& what);

  /// After the forward of a micro-batch that is not its step's last
  /// (gradient accumulation): keeps its BatchNorm moments for reduce().
  void keep_micro_batch_moments();
  /// Before the step's (last) backward: arms the gradient hooks.
  void before_backward(int64_t step);
  /// After backward, without reading anything on the host: the gradients
  /// averaged (NCCL: the compute stream waits for each bucket's collective),
  /// then `head` (StepHead's first kStopRequested slots, filled by the
  /// step) with this worker's stop flags and its BatchNorm moments (each
  /// micro-batch's) summed over the workers in one all-reduce, and the
  /// pooled BatchNorm statistics applied (micro-batch after micro-batch). Returns the summed head
  /// (kStepHeadSize values, on the training device).
  torch::Tensor reduce(const torch::Tensor& head, const LocalStop& stop);
  /// What the workers agreed on, from the host's copy of the summed head,
  /// or (nullptr: a step that read nothing) the samples and the last loss
  /// known. `agree_on_stop`: this step is one where every worker reads the
  /// head (the stop flags decide only there). Reports to the coordinator.
  CombinedStep combine(const double* head, bool agree_on_stop);
  /// A bounded all-worker barrier (end of training).
  void barrier(const std::string& what);
  /// Tells the coordinator this worker is done (rank 0 waits, bounded, for
  /// the others before its coordinator stops).
  void finish(int exit_code);

 private:
  void report(const CombinedStep& c);

  dist::ClusterSpec spec_;
  int64_t batch_size_;
  int64_t accumulation_steps_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::train
