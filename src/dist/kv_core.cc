#include "src/dist/kv_core.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace fastnn::dist {

void KvCore::set(const std::string& key, const std::vector<uint8_t>& value) {
  set(key, value, SIZE_MAX);
}

bool KvCore::set(const std::string& key, const std::vector<uint8_t>& value, size_t max_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    const size_t old = it == data_.end() ? 0 : key.size() + it->second.size();
    const size_t now = bytes_ - old + key.size() + value.size();
    if (now > max_bytes && now > bytes_) return false;
    bytes_ = now;
    data_[key] = value;
  }
  cv_.notify_all();
  return true;
}

std::optional<std::vector<uint8_t>> KvCore::get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

int64_t KvCore::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    if (it != data_.end()) {
      const std::string text(it->second.begin(), it->second.end());
      size_t used = 0;
      try {
        value = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) {
        throw std::invalid_argument("store key '" + key.substr(0, 100) +
                                    "' does not hold an integer");
      }
    }
    if (__builtin_add_overflow(value, delta, &value)) {
      throw std::invalid_argument("store key '" + key.substr(0, 100) + "': adding " +
                                  std::to_string(delta) + " overflows a 64-bit integer");
    }
    const std::string text = std::to_string(value);
    const bool fresh = it == data_.end();
    auto& slot = data_[key];
    bytes_ = bytes_ - slot.size() + text.size() + (fresh ? key.size() : 0);
    slot.assign(text.begin(), text.end());
  }
  cv_.notify_all();
  return value;
}

bool KvCore::check(const std::vector<std::string>& keys) const {
  std::lock_guard<std::mutex> lock(mu_);
  return missing_locked(keys).empty();
}

std::vector<std::string> KvCore::wait(const std::vector<std::string>& keys,
                                      Clock::time_point deadline,
                                      const std::function<bool()>& abort) {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<std::string> missing = missing_locked(keys);
  while (!missing.empty() && !(abort && abort())) {
    if (Clock::now() >= deadline) return missing_locked(keys);
    cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
    missing = missing_locked(keys);
  }
  return missing;
}

bool KvCore::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  bytes_ -= key.size() + it->second.size();
  data_.erase(it);
  return true;
}

int64_t KvCore::num_keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(data_.size());
}

void KvCore::notify_all() {
  // Taking the lock orders the wake-up after a waiter's predicate check.
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

std::vector<std::string> KvCore::missing_locked(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.count(k)) missing.push_back(k);
  }
  return missing;
}

}  // namespace fastnn::dist
