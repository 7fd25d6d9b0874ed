// libprotobuf logs an ERROR line for every string field with invalid UTF-8
// that it is asked to parse, and most fuzz inputs are that: the parse still
// fails and the target still sees it fail; the line only slows the run
// and fills its log (hundreds of MB in a long run of the example target).
// FATAL messages still abort.
#pragma once

#include <google/protobuf/stubs/logging.h>

#include <string>

namespace fastnn::fuzz {

inline void quiet_protobuf_logs() {
  static const bool done = [] {
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    return true;
  }();
  (void)done;
}

}  // namespace fastnn::fuzz
