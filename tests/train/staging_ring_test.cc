// The reuse rule of the CUDA feed's pinned staging buffers, with fake
// events: a buffer is refilled only once the copy that read it is done, the
// host waits only when every buffer's copy is in flight, and then for the
// oldest.
#include "src/train/staging_ring.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace fastnn::train {
namespace {

// What the fake device knows: which slot's copy is done, and who waited.
struct FakeDevice {
  std::vector<bool> done;
  std::vector<int> waited_for;
};

// An event a test completes by hand; synchronize() completes it (the host
// waited for the copy) and says so.
class FakeEvent {
 public:
  static FakeDevice* device;
  FakeEvent() : slot_(next_slot++) {}
  bool query() const { return device->done[static_cast<size_t>(slot_)]; }
  void synchronize() const {
    device->waited_for.push_back(slot_);
    device->done[static_cast<size_t>(slot_)] = true;
  }
  // A copy enqueued: not done until the test says so.
  void record() { device->done[static_cast<size_t>(slot_)] = false; }

  static int next_slot;

 private:
  int slot_;
};
FakeDevice* FakeEvent::device = nullptr;
int FakeEvent::next_slot = 0;

class StagingRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeEvent::device = &device_;
    FakeEvent::next_slot = 0;
    device_.done.assign(8, true);
  }
  // One batch through `ring`: acquire, "copy", record, submit.
  static int stage(StagingRing<FakeEvent>& ring) {
    const int slot = ring.acquire();
    ring.event(slot).record();
    ring.submit(slot);
    return slot;
  }
  FakeDevice device_;
};

TEST_F(StagingRingTest, EverySlotIsUsedOnceBeforeAnyIsReused) {
  StagingRing<FakeEvent> ring(3);
  EXPECT_EQ(stage(ring), 0);
  EXPECT_EQ(stage(ring), 1);
  EXPECT_EQ(stage(ring), 2);
  EXPECT_EQ(ring.host_waits(), 0);
  EXPECT_TRUE(device_.waited_for.empty());
}

TEST_F(StagingRingTest, ASlotWhoseCopyIsDoneIsReusedWithoutAHostWait) {
  StagingRing<FakeEvent> ring(2);
  stage(ring);
  stage(ring);
  // The copies complete in order (one copy stream).
  device_.done[0] = true;
  EXPECT_EQ(stage(ring), 0);
  device_.done[1] = true;
  EXPECT_EQ(stage(ring), 1);
  EXPECT_EQ(ring.host_waits(), 0);
  EXPECT_TRUE(device_.waited_for.empty());
}

TEST_F(StagingRingTest, OnlyADoneCopyFreesItsSlotOldestFirst) {
  StagingRing<FakeEvent> ring(3);
  stage(ring);  // 0
  stage(ring);  // 1
  stage(ring);  // 2
  // Slot 1's copy is done, slot 0's not: 1 is the only one free.
  device_.done[1] = true;
  EXPECT_EQ(stage(ring), 1);
  // Both 0 and 2 done: the oldest submitted (0) first, then 2.
  device_.done[0] = true;
  device_.done[2] = true;
  EXPECT_EQ(stage(ring), 0);
  EXPECT_EQ(stage(ring), 2);
  EXPECT_EQ(ring.host_waits(), 0);
}

TEST_F(StagingRingTest, AnExhaustedRingWaitsForTheOldestCopyOnly) {
  StagingRing<FakeEvent> ring(2);
  stage(ring);  // 0
  stage(ring);  // 1, both in flight
  EXPECT_EQ(stage(ring), 0);
  EXPECT_EQ(device_.waited_for, std::vector<int>{0});
  EXPECT_EQ(ring.host_waits(), 1);
  // 1 is now the oldest in flight, 0 was just resubmitted.
  EXPECT_EQ(stage(ring), 1);
  EXPECT_EQ(device_.waited_for, (std::vector<int>{0, 1}));
  EXPECT_EQ(ring.host_waits(), 2);
}

TEST_F(StagingRingTest, ASlotAcquiredButNeverSubmittedIsHandedOutAgain) {
  StagingRing<FakeEvent> ring(2);
  stage(ring);                        // 0 in flight
  const int failed = ring.acquire();  // filling failed before its copy
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(ring.acquire(), 1);  // never read by a copy: no wait, no event asked
  EXPECT_EQ(ring.host_waits(), 0);
  EXPECT_THROW(ring.submit(0), std::logic_error);
  ring.submit(1);
}

TEST_F(StagingRingTest, AtLeastOneSlot) {
  EXPECT_THROW(StagingRing<FakeEvent>(0), std::invalid_argument);
}

}  // namespace
}  // namespace fastnn::train
