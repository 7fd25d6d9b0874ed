// The key-value store's in-memory core: the coordinator serves it over gRPC
// and a one-process job uses it directly. Thread-safe; waits are bounded by
// a deadline and can be cut short by an abort predicate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fastnn::dist {

class KvCore {
 public:
  using Clock = std::chrono::steady_clock;

  void set(const std::string& key, const std::vector<uint8_t>& value);
  /// set() unless the store would then hold more than `max_bytes` of keys
  /// and values together; returns whether it stored the value.
  bool set(const std::string& key, const std::vector<uint8_t>& value, size_t max_bytes);
  /// The value, or nullopt when `key` does not exist.
  std::optional<std::vector<uint8_t>> get(const std::string& key) const;
  /// Adds `delta` to the decimal integer stored at `key` (0 when absent),
  /// stores it back as decimal text (c10d's TCPStore does the same) and
  /// returns it. Throws std::invalid_argument when the value is not one.
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::vector<std::string>& keys) const;
  /// Waits until every key exists, `deadline` passes, or `abort()` returns
  /// true (re-checked on notify_all() and every 200 ms); returns the keys
  /// still missing.
  std::vector<std::string> wait(const std::vector<std::string>& keys, Clock::time_point deadline,
                                const std::function<bool()>& abort);
  bool remove(const std::string& key);
  int64_t num_keys() const;
  /// Wakes every waiter to re-check its abort predicate.
  void notify_all();

 private:
  std::vector<std::string> missing_locked(const std::vector<std::string>& keys) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<uint8_t>> data_;
  /// Bytes of keys and values in data_.
  size_t bytes_ = 0;
};

}  // namespace fastnn::dist
