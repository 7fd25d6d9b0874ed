#include "src/io/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include <map>
#include <mutex>
#include <string>

#include "src/log/log.h"

namespace fastnn::io {
namespace {

// Distinct messages remembered; others beyond it share one count. The
// texts come from the schema (field names), not from the data, so a
// handful is the norm.
constexpr size_t kDistinct = 64;

void handle(google::protobuf::LogLevel level, const char* /*file*/, int /*line*/,
            const std::string& text) {
  if (level < google::protobuf::LOGLEVEL_WARNING) return;
  const std::string message = text.substr(0, text.find_last_not_of(" \n") + 1);
  static std::mutex mu;
  static auto* seen = new std::map<std::string, long long>();  // never destroyed: any thread
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = seen->count(message) || seen->size() < kDistinct ? message : "";
  const long long n = ++(*seen)[key];
  if (n <= kProtobufRepeatsShown) {
    log::warning() << "libprotobuf: " << message;
  } else if (n == kProtobufRepeatsShown + 1) {
    log::warning() << "libprotobuf: " << (key.empty() ? "further messages" : "\"" + key + "\"")
                   << " repeated; further repeats are not shown";
  }
}

}  // namespace

void route_protobuf_log() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(&handle); });
}

}  // namespace fastnn::io
