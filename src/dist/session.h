// A worker's membership in a distributed job, over the chief's gRPC
// coordinator: rendezvous, the key-value store, heartbeats, job status and
// graceful stop. Rank 0 runs the coordinator server in-process. No LibTorch.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "src/dist/cluster.h"
#include "src/dist/kv_store.h"

namespace fastnn::dist {

struct SessionOptions {
  /// Rendezvous deadline, heartbeat loss bound, and store wait bound.
  std::chrono::seconds worker_timeout{60};
  std::chrono::milliseconds heartbeat_interval{1000};
  /// The job's shared token (never logged). Empty only for world_size 1.
  std::string token;
  /// TLS when set: PEM files (server cert+key on the chief, CA on workers).
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  /// The settings every worker must share (config::job_settings()); when
  /// set, rendezvous compares each worker's with rank 0's. Default: empty,
  /// no comparison.
  std::string job_settings;
};

/// What a worker reports each logging interval (shown by job status).
struct WorkerReport {
  int64_t step = 0;
  double loss = 0;
  double images_per_sec = 0;
  double eta_secs = -1;
};

/// The options from the hyperparameters and the environment: timeout from
/// worker_timeout_secs, token from job_token_file (trimmed) or else
/// FASTNN_JOB_TOKEN, TLS files, the job's shared settings. Throws
/// ConfigError for an unreadable token file or an incomplete TLS setup.
SessionOptions session_options(const HParams& hp, const Environment& env);

/// 32 random hex digits (/dev/urandom) for a job's shared token.
std::string make_job_token();

/// The token of a job whose workers all run on this host
/// (ClusterSpec::local_job_id): rank 0 writes a fresh one to
/// <XDG_RUNTIME_DIR or /tmp>/fastnn-<uid>/job-<id>.token (directory 0700,
/// file 0600, written atomically), the others wait for it up to `timeout`.
/// DistributedError when the directory is not this user's alone or the file
/// does not appear.
std::string local_job_token(const ClusterSpec& spec, std::chrono::milliseconds timeout);

class WorkerSession {
 public:
  /// Starts the coordinator (rank 0), connects, and completes rendezvous:
  /// returns when all world_size workers have joined and, with
  /// options.job_settings, found theirs equal to rank 0's; throws
  /// DistributedError naming the missing ranks after worker_timeout, and
  /// ConfigError (exit 2) on every worker, naming the differing keys and
  /// values, when a worker's settings differ.
  WorkerSession(const ClusterSpec& spec, const SessionOptions& options);
  ~WorkerSession();

  const ClusterSpec& spec() const;
  KeyValueStore& store();

  /// Non-blocking; sends the latest report with the next heartbeat.
  void report(const WorkerReport& r);
  /// A graceful stop was requested (from `fastnn_job stop` or a signal).
  bool stop_requested() const;
  /// Set when the coordinator declared a worker lost (or the coordinator
  /// itself became unreachable): a message naming it and its last step.
  std::optional<std::string> failure() const;
  /// Tells the coordinator this worker finished with `exit_code`, stops the
  /// heartbeat thread, and on rank 0 waits (at most worker_timeout) for the
  /// others to finish or hear of a failure before stopping the server.
  /// Idempotent; the destructor calls finish(1) when it was not called.
  void finish(int exit_code);
  /// Asks the coordinator for a graceful stop (e.g. from a signal handler's
  /// consumer); every worker's stop_requested() turns true. Non-blocking.
  void request_stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::dist
