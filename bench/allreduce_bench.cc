// All-reduce bandwidth of this project's communicators, reported as
// nccl-tests does: algbw = S / t, busbw = algbw * 2(n-1)/n (0 at n = 1,
// where algbw is the figure to compare).
// Usage: allreduce_bench RANK WORLD PORT BYTES ITERS [cuda]
//   (start WORLD of them). cuda: the trainer's NCCL collective on
//   cuda:RANK (a CUDA build only); otherwise Gloo on CPU tensors.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "src/compat/torch_compat.h"
#include "src/dist/gloo_communicator.h"
#include "src/dist/kv_store.h"

#if FASTNN_WITH_CUDA && FASTNN_HAVE_NCCL
#include "src/cuda/nccl_collective.h"
#endif

namespace {

// The trainer's KeyValueStore over c10d's TCPStore (for NCCL's unique id).
class TcpKeyValueStore : public fastnn::dist::KeyValueStore {
 public:
  explicit TcpKeyValueStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    store_->set(key, value);
  }
  std::vector<uint8_t> get(const std::string& key) override { return store_->get(key); }
  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    store_->wait(keys, timeout);
  }
  bool remove(const std::string& key) override { return store_->deleteKey(key); }
  int64_t num_keys() override { return store_->getNumKeys(); }
  std::chrono::milliseconds timeout() const override { return std::chrono::seconds(60); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace

int main(int argc, char** argv) {
  const bool cuda = argc == 7 && std::string(argv[6]) == "cuda";
  if (argc != 6 && !cuda) {
    std::fprintf(stderr, "usage: %s RANK WORLD PORT BYTES ITERS [cuda]\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const int world = std::atoi(argv[2]);
  const int port = std::atoi(argv[3]);
  const int64_t bytes = std::atoll(argv[4]);
  const int iters = std::atoi(argv[5]);
  torch::set_num_threads(1);
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.numWorkers = world;
  so.timeout = std::chrono::seconds(60);
  fastnn::compat::use_socket_tcpstore(so);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  std::unique_ptr<fastnn::dist::Collective> collective;
  TcpKeyValueStore kv(store);
  auto options = torch::TensorOptions();
  if (cuda) {
#if FASTNN_WITH_CUDA && FASTNN_HAVE_NCCL
    fastnn::dist::NcclOptions o;
    o.rank = rank;
    o.world_size = world;
    o.device = rank;
    collective = fastnn::dist::make_nccl_collective(kv, o);
    options = options.device(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank)));
#else
    std::fprintf(stderr, "%s: this build has no CUDA LibTorch with NCCL\n", argv[0]);
    return 2;
#endif
  } else {
    fastnn::dist::CommunicatorOptions o;
    o.rank = rank;
    o.world_size = world;
    collective = std::make_unique<fastnn::dist::GlooCommunicator>(store, o);
  }
  auto& comm = *collective;
  auto buffer = torch::ones({bytes / 4}, options);
  comm.all_reduce_async(buffer)->wait("warm-up");
  comm.barrier("start");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.all_reduce_async(buffer)->wait("all-reduce");
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (rank == 0) {
    const double algbw = static_cast<double>(bytes) / secs / 1e9;
    const double busbw = algbw * 2.0 * (world - 1) / world;
    std::printf("allreduce %s world=%d bytes=%lld time_ms=%.2f algbw_GBps=%.3f busbw_GBps=%.3f\n",
                comm.backend().c_str(), world, static_cast<long long>(bytes), secs * 1e3, algbw,
                busbw);
  }
  return 0;
}
