// TensorBoard event files: events.out.tfevents.<secs>.<host>, TFRecord
// framing of tf.Event protos, first record file_version "brain.Event:2".
// Appended and flushed as training goes, so TensorBoard can follow.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace fastnn::io {

class EventWriter {
 public:
  /// Creates the file in `dir` (created if missing). Throws DataError.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// One Event at `step` holding every (tag, value) as a simple_value.
  void add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& serialized);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace fastnn::io
