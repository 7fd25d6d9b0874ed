#include "src/train/distributed_step.h"

#include <csignal>
#include <cstdlib>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "fastnn/errors.h"
#include "src/dist/gradient_reducer.h"
#include "src/dist/process_group.h"
#include "src/dist/session.h"
#include "src/dist/store_adapter.h"
#include "src/log/log.h"
#include "src/train/batch_norm_pool.h"

namespace fastnn::train {
namespace {

// The one place the collective engine is chosen: c10d's NCCL group for
// CUDA tensors, its Gloo group for CPU tensors; both rendezvous through the
// coordinator's store, each under a prefix of its own.
std::unique_ptr<dist::Collective> make_collective(const dist::ClusterSpec& spec,
                                                  const torch::Device& device,
                                                  std::chrono::milliseconds timeout,
                                                  dist::KeyValueStore& store) {
  dist::CommunicatorOptions o;
  o.rank = spec.rank;
  o.world_size = spec.world_size;
  o.timeout = timeout;
  o.coordinator_host = dist::split_host_port(spec.coordinator, "coordinator").first;
  o.cuda_device = device.is_cuda() ? device.index() : 0;
  auto adapter = c10::make_intrusive<dist::StoreAdapter>(store);
  if (device.is_cuda()) {
    return dist::connect_nccl(c10::make_intrusive<c10d::PrefixStore>("fastnn/nccl", adapter), o);
  }
  return dist::connect_gloo(c10::make_intrusive<c10d::PrefixStore>("fastnn/gloo", adapter), o);
}

}  // namespace

struct DistributedStep::Impl {
  using Clock = std::chrono::steady_clock;
  std::unique_ptr<dist::WorkerSession> session;
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds heartbeat_interval{1000};
  int64_t stop_at_step = 0;
  int64_t step = 0;
  Clock::time_point last_step = Clock::now();
  double images_per_sec = 0;
  double last_loss = 0;  // the last one read, for reports of steps that read none

  // A collective fails as soon as a peer's connection drops, before the
  // coordinator has declared that peer lost (no heartbeat for
  // worker_timeout). Wait for its verdict — no longer than worker_timeout
  // (plus two heartbeats, the coordinator's own slack) after this worker's
  // last good step — so the message names the lost worker and its last step.
  [[noreturn]] void rethrow_with_failure(const DistributedError& e) {
    const auto deadline = last_step + timeout + 2 * heartbeat_interval;
    while (!session->failure() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto failure = session->failure();
    session->finish(kExitDistributed);
    if (failure) {
      throw DistributedError(*failure + "; this worker stopped at global step " +
                             std::to_string(step) + " (" + e.what() + ")");
    }
    throw e;
  }

  std::unique_ptr<dist::Collective> comm;
  std::unique_ptr<dist::GradientReducer> reducer;
  std::unique_ptr<BatchNormPool> batch_norm;
};

DistributedStep::DistributedStep(const DistributedStepOptions& options,
                                 const dist::ClusterSpec& spec, const dist::SessionOptions& session,
                                 const torch::Device& device, torch::nn::Module& model,
                                 std::vector<torch::Tensor> trainable)
    : spec_(spec),
      batch_size_(options.batch_size),
      accumulation_steps_(options.accumulation_steps),
      impl_(std::make_unique<Impl>()) {
  const std::chrono::milliseconds timeout = session.worker_timeout;
  impl_->timeout = timeout;
  impl_->heartbeat_interval = session.heartbeat_interval;
  impl_->stop_at_step = options.stop_at_step;
  impl_->session = std::make_unique<dist::WorkerSession>(spec, session);
  impl_->comm = make_collective(spec, device, timeout, impl_->session->store());
  impl_->reducer = std::make_unique<dist::GradientReducer>(*impl_->comm, std::move(trainable),
                                                           options.tensor_fusion_max_bytes);
  impl_->batch_norm = std::make_unique<BatchNormPool>(model);
  log::info() << "distributed: rank " << spec.rank << " of " << spec.world_size << " ("
              << dist::source_name(spec.source) << "), " << impl_->comm->backend() << ", "
              << impl_->reducer->buckets().size() << " gradient buckets of at most "
              << options.tensor_fusion_max_bytes << " bytes, " << impl_->batch_norm->size()
              << " BatchNorm layers pooled";
}

DistributedStep::~DistributedStep() = default;

int DistributedStep::rank() const { return spec_.rank; }

int DistributedStep::world_size() const { return spec_.world_size; }

void DistributedStep::measure_batch_norm(const std::function<void(const torch::Tensor&)>& forward,
                                         std::vector<int64_t> image_chw) {
  impl_->batch_norm->measure_counts(forward, std::move(image_chw));
}

void DistributedStep::broadcast_from_chief(const std::vector<torch::Tensor>& state,
                                           const std::string& what) {
  torch::NoGradGuard no_grad;
  impl_->comm->broadcast(state, what);
  impl_->batch_norm->snapshot();
}

void DistributedStep::keep_micro_batch_moments() {
  impl_->batch_norm->keep_micro_batch(batch_size_);
}

void DistributedStep::before_backward(int64_t step) {
  if (auto f = impl_->session->failure()) {
    throw DistributedError(*f + " (this worker is at global step " + std::to_string(step) + ")");
  }
  impl_->step = step;
  impl_->comm->set_step(step);
  impl_->reducer->prepare();
}

torch::Tensor DistributedStep::reduce(const torch::Tensor& head, const LocalStop& stop) {
  try {
    impl_->reducer->finish();
    // The stop flags join the step's numbers as fills on the device: a copy
    // from pageable host memory would make the host wait for the GPU.
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(head.device());
    const bool requested = stop.requested || impl_->session->stop_requested();
    std::vector<torch::Tensor> parts{head.narrow(0, 0, kStopRequested),
                                     torch::full({1}, requested ? 1.0 : 0.0, f64),
                                     torch::full({1}, stop.signal == SIGINT ? 1.0 : 0.0, f64),
                                     torch::full({1}, stop.signal == SIGTERM ? 1.0 : 0.0, f64)};
    if (impl_->batch_norm->size() > 0) {
      parts.push_back(impl_->batch_norm->step_moments(batch_size_));
    }
    auto all = torch::cat(parts);
    impl_->comm->all_reduce_sum({all}, "step metrics and BatchNorm statistics");
    impl_->batch_norm->apply(all.narrow(0, kStepHeadSize, all.numel() - kStepHeadSize),
                             spec_.world_size, batch_size_);
    return all.narrow(0, 0, kStepHeadSize);
  } catch (const DistributedError& e) {
    impl_->rethrow_with_failure(e);
  }
}

CombinedStep DistributedStep::combine(const double* head, bool agree_on_stop) {
  CombinedStep combined;
  if (!head) {
    combined.samples = batch_size_ * accumulation_steps_ * spec_.world_size;
    combined.loss = impl_->last_loss;
    report(combined);
    return combined;
  }
  combined.samples = static_cast<int64_t>(head[kSamples]);
  combined.loss = combined.samples > 0 ? head[kLossTimesSamples] / head[kSamples] : 0;
  combined.accuracy = combined.samples > 0 ? head[kCorrect] / head[kSamples] : 0;
  impl_->last_loss = combined.loss;
  if (!agree_on_stop) {
    report(combined);
    return combined;
  }
  if (head[kSigterm] > 0) {
    combined.stop = true;
    combined.exit_code = kExitSigterm;
    combined.stop_reason = "a worker received SIGTERM";
  } else if (head[kSigint] > 0) {
    combined.stop = true;
    combined.exit_code = kExitSigint;
    combined.stop_reason = "a worker received SIGINT";
  } else if (head[kStopRequested] > 0) {
    combined.stop = true;
    combined.stop_reason = "graceful stop requested";
  }
  report(combined);
  return combined;
}

void DistributedStep::report(const CombinedStep& c) {
  const auto now = Impl::Clock::now();
  const double secs = std::chrono::duration<double>(now - impl_->last_step).count();
  impl_->last_step = now;
  if (secs > 0) {
    const double ips = static_cast<double>(c.samples) / secs;
    impl_->images_per_sec =
        impl_->images_per_sec > 0 ? 0.9 * impl_->images_per_sec + 0.1 * ips : ips;
  }
  dist::WorkerReport r;
  r.step = impl_->step + 1;
  r.loss = c.loss;
  r.images_per_sec = impl_->images_per_sec;
  if (impl_->stop_at_step > r.step && impl_->images_per_sec > 0 && c.samples > 0) {
    const double steps_per_sec = impl_->images_per_sec / static_cast<double>(c.samples);
    r.eta_secs = static_cast<double>(impl_->stop_at_step - r.step) / steps_per_sec;
  }
  impl_->session->report(r);
}

void DistributedStep::finish(int exit_code) { impl_->session->finish(exit_code); }

void DistributedStep::barrier(const std::string& what) { impl_->comm->barrier(what); }

}  // namespace fastnn::train
