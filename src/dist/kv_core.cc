#include "src/dist/kv_core.h"

#include <stdexcept>

namespace fastnn::dist {

void KvCore::set(const std::string& key, const std::vector<uint8_t>& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
  }
  cv_.notify_all();
}

std::optional<std::vector<uint8_t>> KvCore::get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end())
    return std::nullopt;
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
        throw std::invalid_argument("store key '" + key +
                                    "' does not hold an integer");
      }
    }
    value += delta;
    const std::string text = std::to_string(value);
    data_[key] = std::vector<uint8_t>(text.begin(), text.end());
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
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return missing_locked(keys);
    }
    missing = missing_locked(keys);
  }
  return missing;
}

bool KvCore::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.erase(key) > 0;
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

std::vector<std::string> KvCore::missing_locked(
    const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.count(k))
      missing.push_back(k);
  }
  return missing;
}

}  // namespace fastnn::dist
