// A connection to the coordinator as its clients use it (WorkerSession,
// fastnn_job, tests): the channel, the token on every call, and the mapping
// of a failed call to a DistributedError that says what to do.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "fastnn/coordinator.grpc.pb.h"

namespace fastnn::dist {

struct ClientOptions {
  /// host:port to dial.
  std::string address;
  /// The job's shared token, sent as "authorization: Bearer <token>".
  std::string token;
  /// TLS when set: PEM CA bundle the server's certificate must chain to.
  std::string tls_ca_file;
  /// Name the server certificate must carry when `address` is another name
  /// for it (rank 0 dials 127.0.0.1); empty: the host of `address`.
  std::string tls_target_name;
};

/// Whether a failed call may succeed when retried: the coordinator was
/// unreachable, slow, or went away mid-call (gRPC reports a call cut by the
/// server's shutdown as CANCELLED). Callers that cancel their own calls
/// check for that first.
bool transient(const grpc::Status& status);

/// Whether the server refused the call before running it because all its
/// serving threads were busy (a flood on its port, docs/reliability.md):
/// safe to retry, even for a call that is not idempotent. Also transient().
bool overloaded(const grpc::Status& status);

class CoordinatorClient {
 public:
  /// Throws ConfigError when tls_ca_file cannot be read.
  explicit CoordinatorClient(const ClientOptions& options);

  proto::Coordinator::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  const std::string& address() const { return options_.address; }

  /// A call context carrying the token, with a deadline `timeout` from now.
  /// `wait_for_ready`: a call made while the channel is (re)connecting waits
  /// for it, up to the deadline, instead of failing at once.
  std::unique_ptr<grpc::ClientContext> context(std::chrono::milliseconds timeout,
                                               bool wait_for_ready = true) const;

  /// "coordinator HOST:PORT refused <what>: ..." for a failed call; names
  /// FASTNN_JOB_TOKEN / job_token_file when the token was refused.
  std::string explain(const grpc::Status& status, const std::string& what) const;

 private:
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<proto::Coordinator::Stub> stub_;
};

}  // namespace fastnn::dist
