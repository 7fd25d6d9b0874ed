// An in-process KeyValueStore for tests: what the coordinator's store does,
// without gRPC, shared by threads that play the workers.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "fastnn/errors.h"
#include "src/dist/kv_store.h"

namespace fastnn::dist::testing {

class MemoryStore : public KeyValueStore {
 public:
  explicit MemoryStore(std::chrono::milliseconds timeout = std::chrono::seconds(20))
      : timeout_(timeout) {}

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
    cv_.notify_all();
  }
  std::vector<uint8_t> get(const std::string& key) override {
    wait({key}, timeout_);
    std::lock_guard<std::mutex> lock(mu_);
    return data_.at(key);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t v = 0;
    auto it = data_.find(key);
    if (it != data_.end()) v = std::stoll(std::string(it->second.begin(), it->second.end()));
    v += delta;
    const std::string text = std::to_string(v);
    data_[key] = std::vector<uint8_t>(text.begin(), text.end());
    cv_.notify_all();
    return v;
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys) {
      if (!data_.count(k)) return false;
    }
    return true;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    const bool ok = cv_.wait_for(lock, timeout, [&] {
      for (const auto& k : keys) {
        if (!data_.count(k)) return false;
      }
      return true;
    });
    if (!ok) throw DistributedError("store: timed out waiting for " + keys.front());
  }
  bool remove(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return data_.erase(key) > 0;
  }
  int64_t num_keys() override {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(data_.size());
  }
  std::chrono::milliseconds timeout() const override { return timeout_; }

 private:
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<uint8_t>> data_;
};

}  // namespace fastnn::dist::testing
