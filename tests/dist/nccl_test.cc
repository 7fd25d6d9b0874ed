// The NCCL path without a device: the unique id's trip through the store,
// error mapping, and a bounded failure where no GPU is present.
#include "src/dist/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <thread>

#include "fastnn/errors.h"
#include "tests/dist/memory_store.h"

namespace fastnn::dist {
namespace {

TEST(NcclTest, UniqueIdMadeOnRankZeroReachesEveryRankThroughTheStore) {
  testing::MemoryStore store;
  std::vector<std::vector<uint8_t>> ids(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  // Followers first: they must wait for rank 0's id.
  for (int r : {2, 1, 0}) {
    threads.emplace_back([&, r] {
      try {
        ids[r] = exchange_nccl_unique_id(store, r, "job/nccl_id");
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
    if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  EXPECT_EQ(ids[0].size(), sizeof(ncclUniqueId::internal));
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[2], ids[0]);
  EXPECT_NE(ids[0], std::vector<uint8_t>(ids[0].size(), 0));
}

TEST(NcclTest, FollowerWithoutAnIdFailsWithinTheStoreTimeout) {
  testing::MemoryStore store(std::chrono::milliseconds(300));
  EXPECT_THROW(exchange_nccl_unique_id(store, 1, "job/nccl_id"), DistributedError);
  store.set("job/bad_id", {1, 2, 3});
  try {
    exchange_nccl_unique_id(store, 1, "job/bad_id");
    FAIL() << "a 3-byte id was accepted";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("3 bytes"), std::string::npos) << e.what();
  }
}

TEST(NcclTest, ErrorCodesBecomeDistributedErrorsWithNcclsText) {
  EXPECT_NO_THROW(check_nccl(ncclSuccess, "ok"));
  for (ncclResult_t r : {ncclUnhandledCudaError, ncclSystemError, ncclInternalError,
                         ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError}) {
    try {
      check_nccl(r, "ncclAllReduce of bucket 2");
      FAIL() << "no exception for " << r;
    } catch (const DistributedError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("ncclAllReduce of bucket 2"), std::string::npos) << m;
      EXPECT_NE(m.find(ncclGetErrorString(r)), std::string::npos) << m;
      EXPECT_NE(m.find("NCCL error " + std::to_string(r)), std::string::npos) << m;
    }
  }
}

TEST(NcclTest, WithoutADeviceInitializationFailsAsDistributedError) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    GTEST_SKIP() << "a CUDA device is present";
  }
  testing::MemoryStore store(std::chrono::milliseconds(500));
  NcclOptions o;
  o.timeout = std::chrono::milliseconds(500);
  EXPECT_THROW(NcclCommunicator(store, o), DistributedError);
}

}  // namespace
}  // namespace fastnn::dist
