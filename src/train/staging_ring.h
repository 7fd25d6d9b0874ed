// Which of a fixed ring of reusable host staging buffers the next
// host-to-device copy fills, device-agnostic so that the reuse rule is
// tested without a GPU (tests/train/staging_ring_test.cc). The CUDA feed
// (src/cuda/cuda_device.cc) keeps one page-locked buffer per slot: the
// ring is what bounds its pinned memory to slots x batch bytes.
//
// A slot is handed out again only once the copy that last read it has
// completed, which its event says. The host does not wait in the common
// case: it queries the events (oldest first) and takes the first slot whose
// copy is done. Only when every slot's copy is still in flight (the ring is
// exhausted: the copies are behind the host) does it wait, for the oldest
// one: a bounded wait (one copy), counted in host_waits().
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <vector>

namespace fastnn::train {

/// `Event`: default-constructible; `bool query()` (the work recorded last
/// has completed, or nothing was ever recorded; never blocks) and
/// `void synchronize()` (the host waits until it has). at::cuda::CUDAEvent
/// is one.
template <class Event>
class StagingRing {
 public:
  /// REQUIRES: slots >= 1.
  explicit StagingRing(int slots) : events_(static_cast<size_t>(slots)) {
    if (slots < 1) throw std::invalid_argument("StagingRing: slots must be >= 1");
    for (int i = slots - 1; i >= 0; --i) free_.push_back(i);
  }

  int slots() const { return static_cast<int>(events_.size()); }

  /// The slot the next copy may read from, free to be overwritten on the
  /// host now. Fill it, enqueue the copy, record event(slot) after the
  /// copy on its stream, then submit(slot). A slot acquired and never
  /// submitted (the caller failed in between) is the next one handed out:
  /// no copy ever read it.
  int acquire() {
    if (filling_ >= 0) return filling_;
    if (!free_.empty()) {
      filling_ = free_.back();
      free_.pop_back();
      return filling_;
    }
    for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
      if (events_[static_cast<size_t>(*it)].query()) {
        filling_ = *it;
        in_flight_.erase(it);
        return filling_;
      }
    }
    filling_ = in_flight_.front();
    in_flight_.pop_front();
    events_[static_cast<size_t>(filling_)].synchronize();
    ++host_waits_;
    return filling_;
  }

  /// The event to record after the copy that reads `slot`.
  Event& event(int slot) { return events_.at(static_cast<size_t>(slot)); }

  /// The copy reading the acquired slot is enqueued and its event recorded.
  void submit(int slot) {
    if (slot != filling_) throw std::logic_error("StagingRing: submit of a slot not acquired");
    in_flight_.push_back(slot);
    filling_ = -1;
  }

  /// Times acquire() made the host wait for a copy (every slot in flight).
  int64_t host_waits() const { return host_waits_; }

 private:
  std::vector<Event> events_;
  /// Never read by a copy since the start; handed out first.
  std::vector<int> free_;
  /// Submitted, oldest first.
  std::deque<int> in_flight_;
  int filling_ = -1;
  int64_t host_waits_ = 0;
};

}  // namespace fastnn::train
