// The coordinator's request handling (src/dist/coordinator_service.h): the
// input is a job size and a sequence of calls, each a method byte, a length
// and that many bytes parsed as the method's request message (what a peer
// with the token can send; without it, admit() refuses before parsing
// matters). Long polls are cut to at most 2 ms (negative waits pass as they
// are) so that inputs stay
// fast. Only gRPC statuses may come out: no crash, no sanitizer report, no
// exception.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "quiet_protobuf.h"
#include "src/dist/coordinator_service.h"

namespace {

namespace pb = fastnn::dist::proto;

template <typename Msg>
bool parse(const uint8_t* data, size_t n, Msg* m) {
  return m->ParseFromArray(data, static_cast<int>(n));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fastnn::fuzz::quiet_protobuf_logs();
  if (size < 1) return 0;
  fastnn::dist::CoordinatorOptions o;
  o.world_size = 1 + data[0] % 4;
  o.token = "fuzz";
  o.worker_timeout = std::chrono::milliseconds(50);
  fastnn::dist::detail::Service service(o);
  const fastnn::dist::detail::Service::Cancelled never = [] { return false; };
  size_t pos = 1;
  while (pos + 3 <= size) {
    const uint8_t method = data[pos];
    const size_t n = std::min<size_t>(data[pos + 1] | (data[pos + 2] << 8), size - pos - 3);
    const uint8_t* body = data + pos + 3;
    pos += 3 + n;
    switch (method % 6) {
      case 0: {
        pb::JoinRequest req;
        pb::JoinResponse resp;
        if (!parse(body, n, &req)) break;
        req.set_wait_ms(std::min<int64_t>(req.wait_ms(), 2));
        service.join(&req, &resp, never);
        break;
      }
      case 1: {
        pb::HeartbeatRequest req;
        pb::HeartbeatResponse resp;
        if (parse(body, n, &req)) service.heartbeat(&req, &resp, never);
        break;
      }
      case 2: {
        pb::FinishRequest req;
        pb::FinishResponse resp;
        if (parse(body, n, &req)) service.finish(&req, &resp, never);
        break;
      }
      case 3: {
        pb::StoreRequest req;
        pb::StoreResponse resp;
        if (!parse(body, n, &req)) break;
        req.set_wait_ms(std::min<int64_t>(req.wait_ms(), 2));
        service.store(&req, &resp, never);
        break;
      }
      case 4: {
        pb::StatusRequest req;
        pb::JobStatus resp;
        if (parse(body, n, &req)) service.status(&req, &resp, never);
        break;
      }
      case 5: {
        pb::StopRequest req;
        pb::StopResponse resp;
        if (parse(body, n, &req)) service.stop(&req, &resp, never);
        break;
      }
    }
  }
  service.begin_shutdown();
  return 0;
}
