// The job's key-value store: the coordinator's store (gRPC) seen from a
// worker. It bootstraps the collectives (Gloo's and NCCL's rendezvous, the
// NCCL unique id) and mirrors c10d::Store's calls so an adapter is a thin
// shim. Every blocking call is bounded: it throws DistributedError (exit 5)
// naming the keys it waited for.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::dist {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  /// Blocks until `key` exists (up to timeout()), then returns its value.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  /// Atomically adds `delta` to the integer stored at `key` (0 when absent)
  /// and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// True when every key exists; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Blocks until every key exists or `timeout` passes (DistributedError).
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Removes `key`; false when it did not exist.
  virtual bool remove(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  /// The default bound of get() and wait() without a timeout.
  virtual std::chrono::milliseconds timeout() const = 0;
};

}  // namespace fastnn::dist
