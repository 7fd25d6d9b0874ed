// The chief's gRPC coordinator: rendezvous, the key-value store, heartbeats
// and lost-worker detection, job status, graceful stop, and the standard
// grpc.health.v1 service (unauthenticated, for Kubernetes probes). Every
// Coordinator call must carry "authorization: Bearer <token>"; others are
// refused with UNAUTHENTICATED. WorkerSession starts one on rank 0; tests
// and tools may run one alone.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace fastnn::dist {

/// The most missing ranks a join reply lists (the rest are counted), so a
/// rendezvous timeout of 100,000 workers stays one short line.
inline constexpr int kMaxListedRanks = 16;

struct CoordinatorOptions {
  /// Address to listen on. Default: every interface (a job across machines);
  /// a one-machine job listens on loopback only (see listen_host_for()).
  std::string host = "0.0.0.0";
  /// Port to listen on. 0: any free port (see port()).
  int port = 0;
  /// Workers expected at rendezvous. REQUIRES: >= 1.
  int world_size = 1;
  /// A joined worker without a heartbeat this long is lost.
  std::chrono::milliseconds worker_timeout{60000};
  /// The job's shared token. REQUIRES: not empty.
  std::string token;
  /// TLS when both are set (PEM files); plaintext otherwise.
  std::string tls_cert_file, tls_key_file;
};

class CoordinatorServer {
 public:
  /// Listens and serves; throws DistributedError when the port cannot be
  /// bound, ConfigError when the TLS files cannot be read.
  explicit CoordinatorServer(const CoordinatorOptions& options);
  /// shutdown().
  ~CoordinatorServer();

  /// The port actually bound.
  int port() const;
  /// host:port as bound, e.g. "127.0.0.1:41234" ("[::1]:41234" for IPv6).
  std::string address() const;
  /// An address a client on this machine can dial: 127.0.0.1:port when
  /// listening on every interface, address() otherwise.
  std::string local_address() const;
  /// Waits up to `timeout` until every worker has finished or been lost, or,
  /// once the job failed or a stop was requested, has heard of it through a
  /// heartbeat; lets rank 0 leave without peers taking it for lost.
  void drain(std::chrono::milliseconds timeout);
  /// Fails the job with `message` (e.g. the chief's rendezvous timed out):
  /// every long poll returns it, every heartbeat carries it.
  void abort(const std::string& message);
  /// Health NOT_SERVING, wakes every long poll, stops within ~1 s.
  /// Idempotent.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Where the chief's coordinator listens, from the host the workers dial
/// (ClusterSpec::coordinator's host): that host itself when it is a loopback
/// address (127.0.0.0/8, ::1, localhost), as in a one-machine job such as the
/// nproc_per_node launcher's, so that nothing off the machine can reach it;
/// "0.0.0.0", every interface, otherwise.
std::string listen_host_for(const std::string& coordinator_host);

/// A TCP port free on all interfaces right now (bound to 0, then released):
/// for the launcher's MASTER_PORT and tests. Throws DistributedError.
int pick_free_port();

/// Reads a whole file (TLS PEMs, token files); ConfigError naming `key`.
std::string read_text_file(const std::string& path, const std::string& key);

}  // namespace fastnn::dist
