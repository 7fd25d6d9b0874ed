// c10d::Store over the job's KeyValueStore, so Gloo's rendezvous (and the
// NCCL unique id) travel through the coordinator like every other key.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "src/dist/kv_store.h"

namespace fastnn::dist {

/// Forwards every call to `store`, which must outlive the adapter. Blocking
/// calls are bounded by the store's own timeout (DistributedError).
class StoreAdapter : public c10d::Store {
 public:
  explicit StoreAdapter(KeyValueStore& store);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  /// Another adapter over the same store. Pure virtual in c10d::Store in
  /// recent LibTorch (2.11 has it; 1.13 does not): no `override`, so it
  /// overrides where the base declares it and is a plain method elsewhere.
  c10::intrusive_ptr<c10d::Store> clone() {  // NOLINT(modernize-use-override)
    return c10::make_intrusive<StoreAdapter>(store_);
  }

 private:
  KeyValueStore& store_;
};

}  // namespace fastnn::dist
