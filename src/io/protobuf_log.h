// libprotobuf's own log lines through the project's log (src/log/log.h).
//
// libprotobuf writes an ERROR line to stderr for every string field with
// invalid UTF-8 that it parses: one per bad record in a damaged dataset,
// one per message from a misbehaving peer. The records are already counted
// (bad_example) and the peers refused; the lines only bury the output. Once
// routed, each distinct message is printed at most kProtobufRepeatsShown
// times as a warning, then once more saying that the rest are not shown.
#pragma once

namespace fastnn::io {

inline constexpr int kProtobufRepeatsShown = 3;

/// Installs the handler (once per process; later calls do nothing).
void route_protobuf_log();

}  // namespace fastnn::io
