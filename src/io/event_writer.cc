#include "src/io/event_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "fastnn/errors.h"
#include "fastnn/event.pb.h"
#include "fastnn/tfrecord.h"

namespace fastnn::io {
namespace {

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventWriter::EventWriter(const std::string& dir) {
  std::filesystem::create_directories(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const auto secs = static_cast<long long>(wall_time());
  path_ =
      (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(secs) + "." + host))
          .string();
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) {
    throw DataError("cannot create event file '" + path_ + "': " + std::strerror(errno));
  }
  tfproto::Event header;
  header.set_wall_time(wall_time());
  header.set_file_version("brain.Event:2");
  write_event(header.SerializeAsString());
  flush();
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

void EventWriter::write_event(const std::string& serialized) {
  const std::string framed = frame_record(serialized);
  if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size()) {
    throw DataError("cannot write event file '" + path_ + "': " + std::strerror(errno));
  }
}

void EventWriter::add_scalars(int64_t step,
                              const std::vector<std::pair<std::string, double>>& values) {
  tfproto::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  auto* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    auto* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  write_event(event.SerializeAsString());
}

void EventWriter::flush() { std::fflush(file_); }

}  // namespace fastnn::io
