// All-reduce bandwidth of this project's Gloo communicator, reported as
// nccl-tests does: algbw = S / t, busbw = algbw * 2(n-1)/n.
// Usage: allreduce_bench RANK WORLD PORT BYTES ITERS   (start WORLD of them)
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/compat/torch_compat.h"
#include "src/dist/gloo_communicator.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s RANK WORLD PORT BYTES ITERS\n", argv[0]);
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
  fastnn::dist::GlooCommunicator comm(store, o);
  auto buffer = torch::ones({bytes / 4});
  comm.all_reduce_async(buffer)->wait("warm-up");
  comm.barrier("start");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) comm.all_reduce_async(buffer)->wait("all-reduce");
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (rank == 0) {
    const double algbw = static_cast<double>(bytes) / secs / 1e9;
    const double busbw = algbw * 2.0 * (world - 1) / world;
    std::printf("allreduce world=%d bytes=%lld time_ms=%.2f algbw_GBps=%.3f busbw_GBps=%.3f\n",
                world, static_cast<long long>(bytes), secs * 1e3, algbw, busbw);
  }
  return 0;
}
