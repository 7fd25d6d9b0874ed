// The Coordinator service's request handling, transport aside: the gRPC
// methods admit a call (the token) and hand it to the
// handlers below, which the fuzz target (fuzz/coordinator_fuzz.cc) also calls
// directly. Only coordinator.cc and the fuzz target include this.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "fastnn/coordinator.grpc.pb.h"
#include "src/dist/coordinator.h"
#include "src/dist/kv_core.h"

namespace fastnn::dist::detail {

namespace pb = fastnn::dist::proto;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Longest server-side long poll one call may ask for.
constexpr milliseconds kMaxWait{600000};
/// Long polls re-check whether their caller has gone this often.
constexpr milliseconds kPollSlice{200};
/// The key-value store's bound: keys and values together.
constexpr size_t kMaxStoreBytes = size_t{256} << 20;

struct Worker {
  bool joined = false, finished = false, lost = false;
  /// Was told of the job's failure in a heartbeat response.
  bool heard_failure = false;
  std::string host;
  int64_t pid = 0;
  Clock::time_point last_seen;
  pb::WorkerReport report;
  int exit_code = 0;
};

inline std::string seconds_text(milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", d.count() / 1000.0);
  return buf;
}

/// Compares without an early exit (the token's length is not secret).
inline bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

class Service final : public pb::Coordinator::Service {
 public:
  /// True once the caller has cancelled or its deadline passed.
  using Cancelled = std::function<bool()>;

  explicit Service(const CoordinatorOptions& o)
      : opts_(o), workers_(o.world_size), start_(Clock::now()) {}

  grpc::Status Join(grpc::ServerContext* ctx, const pb::JoinRequest* req,
                    pb::JoinResponse* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return join(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Join after admission; `cancelled` tells when the caller has gone.
  grpc::Status join(const pb::JoinRequest* req, pb::JoinResponse* resp,
                    [[maybe_unused]] const Cancelled& cancelled) {
    if (req->world_size() != opts_.world_size) {
      return grpc::Status(grpc::FAILED_PRECONDITION,
                          "rank " + std::to_string(req->rank()) + " expects world size " +
                              std::to_string(req->world_size()) + ", the coordinator " +
                              std::to_string(opts_.world_size));
    }
    if (auto status = check_rank(req->rank()); !status.ok()) return status;
    std::unique_lock<std::mutex> lock(mu_);
    Worker& worker = workers_[req->rank()];
    if (worker.joined && rendezvous_done_ &&
        (worker.pid != req->pid() || worker.host != req->host())) {
      return grpc::Status(grpc::FAILED_PRECONDITION, "rank " + std::to_string(req->rank()) +
                                                         " already joined as " + worker.host + ":" +
                                                         std::to_string(worker.pid));
    }
    // Before completion a restarted process simply replaces the old one.
    worker.joined = true;
    worker.host = req->host();
    worker.pid = req->pid();
    worker.last_seen = Clock::now();
    if (!rendezvous_done_ && joined_locked() == opts_.world_size) {
      rendezvous_done_ = true;
      if (state_ == pb::RENDEZVOUS) state_ = pb::RUNNING;
      for (auto& entry : workers_) entry.last_seen = Clock::now();
      cv_.notify_all();
    }
    const auto deadline = Clock::now() + wait_of(req->wait_ms());
    // In slices, so that a caller that has gone frees its thread.
    auto done = [&] { return rendezvous_done_ || !failure_.empty() || shutting_down_; };
    while (!done() && Clock::now() < deadline && !cancelled()) {
      cv_.wait_until(lock, std::min(deadline, Clock::now() + kPollSlice), done);
    }
    if (!failure_.empty()) return grpc::Status(grpc::ABORTED, failure_);
    if (shutting_down_) return shutting_down_status();
    resp->set_complete(rendezvous_done_);
    resp->set_joined(joined_locked());
    for (int rank = 0; rank < opts_.world_size && resp->missing_size() < kMaxListedRanks; ++rank) {
      if (!workers_[rank].joined) resp->add_missing(rank);
    }
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const pb::HeartbeatRequest* req,
                         pb::HeartbeatResponse* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return heartbeat(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Heartbeat after admission; `cancelled` tells when the caller has gone.
  grpc::Status heartbeat(const pb::HeartbeatRequest* req, pb::HeartbeatResponse* resp,
                         [[maybe_unused]] const Cancelled& cancelled) {
    if (auto s = check_rank(req->rank()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    Worker& w = workers_[req->rank()];
    if (!w.joined) {
      return grpc::Status(grpc::FAILED_PRECONDITION,
                          "rank " + std::to_string(req->rank()) + " has not joined");
    }
    w.last_seen = Clock::now();
    w.report = req->report();
    if (req->request_stop()) {
      if (stop_reason_.empty()) {
        stop_reason_ = "requested by worker " + std::to_string(req->rank());
      }
      request_stop_locked();
    }
    resp->set_state(state_);
    resp->set_stop_requested(stop_requested_);
    resp->set_failure(failure_);
    if (!failure_.empty()) {
      w.heard_failure = true;
      cv_.notify_all();
    }
    return grpc::Status::OK;
  }

  grpc::Status Finish(grpc::ServerContext* ctx, const pb::FinishRequest* req,
                      pb::FinishResponse* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return finish(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Finish after admission; `cancelled` tells when the caller has gone.
  grpc::Status finish(const pb::FinishRequest* req, pb::FinishResponse* resp,
                      [[maybe_unused]] const Cancelled& cancelled) {
    if (auto s = check_rank(req->rank()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    Worker& w = workers_[req->rank()];
    w.finished = true;
    w.exit_code = req->exit_code();
    w.report.set_step(std::max(w.report.step(), req->step()));
    if (w.exit_code != 0 && failure_.empty()) {
      fail_locked(name_locked(req->rank()) + " exited with code " + std::to_string(w.exit_code) +
                  " at step " + std::to_string(w.report.step()));
    }
    bool all = true;
    for (const auto& x : workers_) all = all && x.finished;
    if (all && failure_.empty()) state_ = pb::FINISHED;
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Store(grpc::ServerContext* ctx, const pb::StoreRequest* req,
                     pb::StoreResponse* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return store(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Store after admission; `cancelled` tells when the caller has gone.
  grpc::Status store(const pb::StoreRequest* req, pb::StoreResponse* resp,
                     [[maybe_unused]] const Cancelled& cancelled) {
    const auto& keys = req->keys();
    const bool one_key = keys.size() == 1;
    auto bad = [](const char* what) { return grpc::Status(grpc::INVALID_ARGUMENT, what); };
    auto abort = [this, &cancelled] {
      return failed_.load() || shutting_down_.load() || cancelled();
    };
    switch (req->op()) {
      case pb::StoreRequest::SET:
        if (!one_key) return bad("SET takes one key");
        if (!kv_.set(keys[0], {req->value().begin(), req->value().end()}, kMaxStoreBytes)) {
          return grpc::Status(grpc::RESOURCE_EXHAUSTED, "the store is full (" +
                                                            std::to_string(kMaxStoreBytes) +
                                                            " bytes of keys and values)");
        }
        resp->set_ok(true);
        return grpc::Status::OK;
      case pb::StoreRequest::GET:
      case pb::StoreRequest::WAIT: {
        if (req->op() == pb::StoreRequest::GET && !one_key) {
          return bad("GET takes one key");
        }
        const std::vector<std::string> want(keys.begin(), keys.end());
        const auto missing = kv_.wait(want, Clock::now() + wait_of(req->wait_ms()), abort);
        if (!missing.empty() && abort()) {
          if (cancelled()) return grpc::Status(grpc::CANCELLED, "the caller has gone");
          return abort_status();
        }
        resp->set_ok(missing.empty());
        for (const auto& key : missing) resp->add_missing(key);
        if (missing.empty() && req->op() == pb::StoreRequest::GET) {
          auto value = kv_.get(keys[0]);
          if (value) resp->set_value(std::string(value->begin(), value->end()));
        }
        return grpc::Status::OK;
      }
      case pb::StoreRequest::ADD:
        if (!one_key) return bad("ADD takes one key");
        try {
          resp->set_number(kv_.add(keys[0], req->delta()));
        } catch (const std::invalid_argument& e) {
          return grpc::Status(grpc::INVALID_ARGUMENT, e.what());
        }
        resp->set_ok(true);
        return grpc::Status::OK;
      case pb::StoreRequest::CHECK:
        resp->set_ok(kv_.check({keys.begin(), keys.end()}));
        return grpc::Status::OK;
      case pb::StoreRequest::REMOVE:
        if (!one_key) return bad("REMOVE takes one key");
        resp->set_ok(kv_.remove(keys[0]));
        return grpc::Status::OK;
      case pb::StoreRequest::NUM_KEYS:
        resp->set_number(kv_.num_keys());
        resp->set_ok(true);
        return grpc::Status::OK;
      default:
        return bad("unknown store operation");
    }
  }

  grpc::Status Status(grpc::ServerContext* ctx, const pb::StatusRequest* req,
                      pb::JobStatus* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return status(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Status after admission; `cancelled` tells when the caller has gone.
  grpc::Status status(const pb::StatusRequest* req, pb::JobStatus* resp,
                      [[maybe_unused]] const Cancelled& cancelled) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    resp->set_state(state_);
    resp->set_world_size(opts_.world_size);
    resp->set_stop_requested(stop_requested_);
    resp->set_stop_reason(stop_reason_);
    resp->set_failure(failure_);
    resp->set_uptime_secs(std::chrono::duration<double>(now - start_).count());
    for (int r = 0; r < opts_.world_size; ++r) {
      const Worker& w = workers_[r];
      pb::WorkerStatus* out = resp->add_workers();
      out->set_rank(r);
      out->set_host(w.host);
      out->set_pid(w.pid);
      out->set_state(!w.joined           ? "missing"
                     : w.lost            ? "lost"
                     : w.finished        ? "finished"
                     : !rendezvous_done_ ? "joined"
                                         : "running");
      *out->mutable_report() = w.report;
      out->set_exit_code(w.exit_code);
      if (w.joined) {
        out->set_last_heartbeat_secs(std::chrono::duration<double>(now - w.last_seen).count());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Stop(grpc::ServerContext* ctx, const pb::StopRequest* req,
                    pb::StopResponse* resp) override {
    if (auto s = admit(ctx); !s.ok()) return s;
    return stop(req, resp, [ctx] { return ctx->IsCancelled(); });
  }

  /// Stop after admission; `cancelled` tells when the caller has gone.
  grpc::Status stop(const pb::StopRequest* req, pb::StopResponse* resp,
                    [[maybe_unused]] const Cancelled& cancelled) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_reason_.empty()) stop_reason_ = req->reason().empty() ? "requested" : req->reason();
    request_stop_locked();
    resp->set_state(state_);
    return grpc::Status::OK;
  }

  /// Marks silent workers lost; runs until shutdown.
  void monitor() {
    const milliseconds period =
        std::clamp(opts_.worker_timeout / 10, milliseconds(20), milliseconds(500));
    std::unique_lock<std::mutex> lock(mu_);
    while (!shutting_down_) {
      cv_.wait_for(lock, period, [&] { return shutting_down_.load(); });
      if (!rendezvous_done_ || !failure_.empty()) continue;
      const auto now = Clock::now();
      for (int r = 0; r < opts_.world_size; ++r) {
        Worker& w = workers_[r];
        if (w.finished || w.lost || now - w.last_seen <= opts_.worker_timeout) continue;
        w.lost = true;
        fail_locked(name_locked(r) + " lost at step " + std::to_string(w.report.step()) +
                    ": no heartbeat for " + seconds_text(opts_.worker_timeout));
        break;
      }
    }
  }

  void drain(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& w : workers_) {
        if (!w.joined || w.finished || w.lost) continue;
        if (failure_.empty() || !w.heard_failure) return false;
      }
      return true;
    });
  }

  void abort(const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) fail_locked(message);
  }

  void begin_shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    kv_.notify_all();
  }

  /// Calls refused for a missing or wrong token so far.
  int64_t refused_calls() const { return refused_calls_.load(); }

 private:
  /// The token check. Refusing costs one constant-time comparison and no
  /// lock: cheaper than any per-address rate limiter, which would also let
  /// a process sharing a worker's address starve it. Concurrency is bounded
  /// by the server's limits instead (coordinator.cc, server_limits()).
  grpc::Status admit(grpc::ServerContext* ctx) {
    grpc::Status s = authorize(ctx);
    if (!s.ok()) ++refused_calls_;
    return s;
  }

  grpc::Status authorize(grpc::ServerContext* ctx) const {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end() ||
        !same_secret(std::string(it->second.data(), it->second.size()), "Bearer " + opts_.token)) {
      return grpc::Status(grpc::UNAUTHENTICATED,
                          it == md.end() ? "no job token" : "wrong job token");
    }
    return grpc::Status::OK;
  }

  /// A requested long poll, clamped to [0, kMaxWait] before any
  /// arithmetic (a forged -2^62 ms would overflow the clock's nanoseconds).
  static milliseconds wait_of(int64_t wait_ms) {
    return milliseconds(std::clamp<int64_t>(wait_ms, 0, kMaxWait.count()));
  }

  grpc::Status check_rank(int rank) const {
    if (rank < 0 || rank >= opts_.world_size) {
      return grpc::Status(grpc::INVALID_ARGUMENT, "rank " + std::to_string(rank) +
                                                      " is out of range (world size " +
                                                      std::to_string(opts_.world_size) + ")");
    }
    return grpc::Status::OK;
  }

  grpc::Status shutting_down_status() const {
    return grpc::Status(grpc::UNAVAILABLE, "coordinator shutting down");
  }

  grpc::Status abort_status() {
    if (shutting_down_) return shutting_down_status();
    std::lock_guard<std::mutex> lock(mu_);
    return grpc::Status(grpc::ABORTED, failure_);
  }

  int joined_locked() const {
    return static_cast<int>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.joined; }));
  }

  std::string name_locked(int rank) const {
    const Worker& w = workers_[rank];
    return "worker " + std::to_string(rank) + " (" + w.host + ":" + std::to_string(w.pid) + ")";
  }

  void request_stop_locked() {
    stop_requested_ = true;
    if (state_ == pb::RENDEZVOUS || state_ == pb::RUNNING) {
      state_ = pb::STOPPING;
    }
    cv_.notify_all();
  }

  void fail_locked(const std::string& message) {
    failure_ = message;
    state_ = pb::FAILED;
    failed_ = true;
    cv_.notify_all();
    kv_.notify_all();  // waiters' abort predicates read atomics only
  }

  const CoordinatorOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Worker> workers_;
  pb::JobState state_ = pb::RENDEZVOUS;
  bool rendezvous_done_ = false;
  bool stop_requested_ = false;
  std::string stop_reason_;
  std::string failure_;
  std::atomic<bool> failed_{false}, shutting_down_{false};
  KvCore kv_;
  const Clock::time_point start_;
  std::atomic<int64_t> refused_calls_{0};
};

}  // namespace fastnn::dist::detail
