#include "src/dist/store_adapter.h"

namespace fastnn::dist {

StoreAdapter::StoreAdapter(KeyValueStore& store) : c10d::Store(store.timeout()), store_(store) {}

void StoreAdapter::set(const std::string& key, const std::vector<uint8_t>& value) {
  store_.set(key, value);
}

std::vector<uint8_t> StoreAdapter::get(const std::string& key) {
  // Gloo's rendezvous calls get() for keys its peers have not written yet;
  // wait first so the bound is the c10d timeout the caller configured.
  store_.wait({key}, timeout_);
  return store_.get(key);
}

int64_t StoreAdapter::add(const std::string& key, int64_t value) { return store_.add(key, value); }

bool StoreAdapter::deleteKey(const std::string& key) { return store_.remove(key); }

bool StoreAdapter::check(const std::vector<std::string>& keys) { return store_.check(keys); }

int64_t StoreAdapter::getNumKeys() { return store_.num_keys(); }

void StoreAdapter::wait(const std::vector<std::string>& keys) { store_.wait(keys, timeout_); }

void StoreAdapter::wait(const std::vector<std::string>& keys,
                        const std::chrono::milliseconds& timeout) {
  store_.wait(keys, timeout);
}

}  // namespace fastnn::dist
