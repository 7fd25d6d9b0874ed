#include "src/train/distributed_step.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "fastnn/errors.h"
#include "src/dist/communicator.h"
#include "src/dist/gradient_reducer.h"
#include "src/train/batch_norm_pool.h"

namespace fastnn::train {
namespace {

// Slots of the per-step metrics vector (float64, summed over workers),
// followed by the BatchNorm moments.
enum Metric { kLossTimesSamples, kCorrect, kSamples, kStopRequested, kSigint, kSigterm, kMetrics };

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int to_int(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(what + ": '" + text + "' is not an integer");
}

std::pair<std::string, int> split_host_port(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw ConfigError("coordinator address '" + address + "' is not host:port");
  }
  return {address.substr(0, colon), to_int(address.substr(colon + 1), "port of " + address)};
}

std::chrono::seconds worker_timeout() {
  // Until hparams carries worker_timeout_secs (dist-control), the bound
  // comes from the environment; 60 s as DESIGN.md asks (≤ 60).
  const std::string v = env("FASTNN_WORKER_TIMEOUT_SECS");
  return std::chrono::seconds(v.empty() ? 60 : to_int(v, "FASTNN_WORKER_TIMEOUT_SECS"));
}

}  // namespace

struct DistributedStep::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_ptr<dist::Communicator> comm;
  std::unique_ptr<dist::GradientReducer> reducer;
  std::unique_ptr<BatchNormPool> batch_norm;
};

dist::ClusterSpec DistributedStep::cluster(const HParams& hp) {
  // The two sources the data plane needs before the coordinator's full
  // resolution (dist::resolve_cluster) is available: FastNN's flags and
  // torchrun's variables.
  dist::ClusterSpec spec;
  const auto hosts = split_list(hp.worker_hosts);
  if (hosts.size() > 1) {
    spec.world_size = static_cast<int>(hosts.size());
    spec.rank = static_cast<int>(hp.task_index);
    spec.coordinator = hosts[0];
    spec.hosts = hosts;
    spec.source = "flags";
  } else if (!env("WORLD_SIZE").empty() && !env("RANK").empty()) {
    spec.world_size = to_int(env("WORLD_SIZE"), "WORLD_SIZE");
    spec.rank = to_int(env("RANK"), "RANK");
    const std::string port = env("MASTER_PORT").empty() ? "29500" : env("MASTER_PORT");
    spec.coordinator =
        (env("MASTER_ADDR").empty() ? "127.0.0.1" : env("MASTER_ADDR")) + ":" + port;
    spec.source = "torchrun";
  }
  if (spec.rank < 0 || spec.rank >= spec.world_size) {
    throw ConfigError("rank " + std::to_string(spec.rank) + " is outside [0, world_size=" +
                      std::to_string(spec.world_size) + ") (source: " + spec.source + ")");
  }
  return spec;
}

DistributedStep::DistributedStep(const HParams& hp, const dist::ClusterSpec& spec,
                                 torch::nn::Module& model,
                                 std::vector<torch::Tensor> trainable)
    : spec_(spec), batch_size_(hp.batch_size), impl_(std::make_unique<Impl>()) {
  const auto timeout = worker_timeout();
  const auto [host, port] = split_host_port(spec.coordinator);
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(port);
    o.isServer = spec.rank == 0;
    o.numWorkers = spec.world_size;
    o.waitWorkers = true;
    o.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::PrefixStore>(
        "fastnn/data", c10::make_intrusive<c10d::TCPStore>(host, o));
  } catch (const std::exception& e) {
    throw DistributedError("rendezvous at " + spec.coordinator + " (rank " +
                           std::to_string(spec.rank) + " of " +
                           std::to_string(spec.world_size) + ") did not complete in " +
                           std::to_string(timeout.count()) + " s: " +
                           std::string(e.what()).substr(0, 300));
  }
  dist::CommunicatorOptions co;
  co.rank = spec.rank;
  co.world_size = spec.world_size;
  co.timeout = timeout;
  co.coordinator_host = host;
  impl_->comm = std::make_unique<dist::Communicator>(impl_->store, co);
  impl_->reducer = std::make_unique<dist::GradientReducer>(*impl_->comm, std::move(trainable),
                                                           hp.tensor_fusion_max_bytes);
  impl_->batch_norm = std::make_unique<BatchNormPool>(model);
  std::cout << "distributed: rank " << spec.rank << " of " << spec.world_size << " ("
            << spec.source << "), Gloo, " << impl_->reducer->buckets().size()
            << " gradient buckets of at most " << hp.tensor_fusion_max_bytes << " bytes, "
            << impl_->batch_norm->size() << " BatchNorm layers pooled\n";
}

DistributedStep::~DistributedStep() = default;

int DistributedStep::rank() const {
  return spec_.rank;
}

int DistributedStep::world_size() const {
  return spec_.world_size;
}

void DistributedStep::measure_batch_norm(
    const std::function<void(const torch::Tensor&)>& forward, std::vector<int64_t> image_chw) {
  impl_->batch_norm->measure_counts(forward, std::move(image_chw));
}

void DistributedStep::broadcast_from_chief(const std::vector<torch::Tensor>& state,
                                           const std::string& what) {
  torch::NoGradGuard no_grad;
  impl_->comm->broadcast(state, what);
  impl_->batch_norm->snapshot();
}

void DistributedStep::before_backward(int64_t step) {
  impl_->comm->set_step(step);
  impl_->reducer->prepare();
}

CombinedStep DistributedStep::after_backward(double loss, int64_t correct, int64_t samples,
                                             const LocalStop& stop) {
  impl_->reducer->finish();
  auto metrics = torch::zeros({kMetrics}, torch::kFloat64);
  auto* v = metrics.data_ptr<double>();
  v[kLossTimesSamples] = loss * static_cast<double>(samples);
  v[kCorrect] = static_cast<double>(correct);
  v[kSamples] = static_cast<double>(samples);
  v[kStopRequested] = stop.requested ? 1 : 0;
  v[kSigint] = stop.signal == SIGINT ? 1 : 0;
  v[kSigterm] = stop.signal == SIGTERM ? 1 : 0;
  auto all = torch::cat({metrics, impl_->batch_norm->local_moments(batch_size_)});
  impl_->comm->all_reduce_sum({all}, "step metrics and BatchNorm statistics");
  impl_->batch_norm->apply(all.narrow(0, kMetrics, all.numel() - kMetrics), spec_.world_size,
                           batch_size_);
  const auto* s = all.data_ptr<double>();
  CombinedStep c;
  c.samples = static_cast<int64_t>(s[kSamples]);
  c.loss = c.samples > 0 ? s[kLossTimesSamples] / s[kSamples] : 0;
  c.accuracy = c.samples > 0 ? s[kCorrect] / s[kSamples] : 0;
  if (s[kSigterm] > 0) {
    c.stop = true;
    c.exit_code = kExitSigterm;
    c.stop_reason = "a worker received SIGTERM";
  } else if (s[kSigint] > 0) {
    c.stop = true;
    c.exit_code = kExitSigint;
    c.stop_reason = "a worker received SIGINT";
  } else if (s[kStopRequested] > 0) {
    c.stop = true;
    c.stop_reason = "graceful stop requested";
  }
  return c;
}

void DistributedStep::barrier(const std::string& what) {
  impl_->comm->barrier(what);
}

}  // namespace fastnn::train
