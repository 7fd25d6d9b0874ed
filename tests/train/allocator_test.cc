// keep_freed_memory (src/train/process_setup.h): what a training step frees is
// reused by the next one instead of being handed back to the kernel and
// faulted in again.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/train/process_setup.h"

namespace fastnn::train {
namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A step's allocations in miniature: buffers of 0.4 to 24 MiB (lenet's
// activations and their gradients at batch 128), freed in another order
// than they were made. With glibc's own thresholds every round faults all
// of its ~15,000 pages in again; once keep_freed_memory has
// raised them, a round after the first reuses what the one before freed.
TEST(KeepFreedMemory, ARoundOfAllocationsAfterTheFirstFaultsNoPagesIn) {
  // The environment's own malloc settings would win over the call.
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
      std::getenv("GLIBC_TUNABLES") != nullptr) {
    GTEST_SKIP() << "malloc settings in the environment";
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's (scripts/sanitize.sh)";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's (scripts/sanitize.sh)";
#endif
#endif
  keep_freed_memory();
  const size_t sizes[] = {12u << 20, 3u << 20,  6u << 20,  24u << 20,
                          1u << 20,  12u << 20, 400u << 10};
  size_t pages = 0;
  for (size_t s : sizes) pages += s / 4096;
  long last = 0;
  for (int round = 0; round < 5; ++round) {
    const long before = minor_faults();
    std::vector<char*> live;
    for (size_t s : sizes) {
      auto* p = static_cast<char*>(std::malloc(s));
      ASSERT_NE(p, nullptr);
      std::memset(p, 1, s);
      live.push_back(p);
    }
    for (size_t i = live.size(); i-- > 0;) {
      if (i % 2 == 0) std::free(live[i]);
    }
    for (size_t i = live.size(); i-- > 0;) {
      if (i % 2 == 1) std::free(live[i]);
    }
    last = minor_faults() - before;
  }
  // Other threads of the process (none here) and the vector itself may
  // fault a few pages; every page again would be ~15,000.
  EXPECT_LT(last, static_cast<long>(pages / 20)) << "of " << pages << " pages allocated per round";
}

}  // namespace
}  // namespace fastnn::train
