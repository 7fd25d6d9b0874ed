// All-reduce bandwidth of this project's communicators, reported as
// nccl-tests does: algbw = S / t, busbw = algbw * 2(n-1)/n (0 at n = 1,
// where algbw is the figure to compare).
// Usage: allreduce_bench RANK WORLD PORT BYTES ITERS [cuda]
//   (start WORLD of them). cuda: the trainer's collective over c10d's NCCL
//   group on cuda:RANK (a CUDA build only; one GPU per rank: NCCL refuses
//   two ranks on one device); otherwise Gloo on CPU tensors.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "src/compat/torch_compat.h"
#include "src/dist/process_group.h"

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
  fastnn::dist::CommunicatorOptions o;
  o.rank = rank;
  o.world_size = world;
  o.cuda_device = rank;
  auto options = torch::TensorOptions();
  std::unique_ptr<fastnn::dist::Collective> collective;
  try {
    if (cuda) {
      collective = fastnn::dist::connect_nccl(store, o);
      options = options.device(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank)));
    } else {
      collective = fastnn::dist::connect_gloo(store, o);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  auto& comm = *collective;
  auto buffer = torch::ones({bytes / 4}, options);
  comm.all_reduce_async(buffer)->wait("warm-up");
  comm.barrier("start");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.all_reduce_async(buffer)->wait("all-reduce");
  // NCCL's wait() only orders the stream: the barrier's host read ends the
  // timed region after the last collective.
  comm.barrier("end");
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
