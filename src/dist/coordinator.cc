#include "src/dist/coordinator.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "fastnn/coordinator.grpc.pb.h"
#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/dist/kv_core.h"

namespace fastnn::dist {
namespace {

namespace pb = fastnn::dist::proto;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kServiceName[] = "fastnn.dist.proto.Coordinator";
/// Longest server-side long poll one call may ask for.
constexpr milliseconds kMaxWait{600000};

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

std::string seconds_text(milliseconds d) {
  if (d.count() % 1000 == 0)
    return std::to_string(d.count() / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", d.count() / 1000.0);
  return buf;
}

/// Compares without an early exit (the token's length is not secret).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

class Service final : public pb::Coordinator::Service {
 public:
  explicit Service(const CoordinatorOptions& o)
      : opts_(o), workers_(o.world_size), start_(Clock::now()) {}

  grpc::Status Join(grpc::ServerContext* ctx,
                    const pb::JoinRequest* req,
                    pb::JoinResponse* resp) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
    if (req->world_size() != opts_.world_size) {
      return grpc::Status(
          grpc::FAILED_PRECONDITION,
          "rank " + std::to_string(req->rank()) + " expects world size " +
              std::to_string(req->world_size()) + ", the coordinator " +
              std::to_string(opts_.world_size));
    }
    if (auto s = check_rank(req->rank()); !s.ok())
      return s;
    std::unique_lock<std::mutex> lock(mu_);
    Worker& w = workers_[req->rank()];
    if (w.joined && rendezvous_done_ &&
        (w.pid != req->pid() || w.host != req->host())) {
      return grpc::Status(grpc::FAILED_PRECONDITION,
                          "rank " + std::to_string(req->rank()) +
                              " already joined as " + w.host + ":" +
                              std::to_string(w.pid));
    }
    // Before completion a restarted process simply replaces the old one.
    w.joined = true;
    w.host = req->host();
    w.pid = req->pid();
    w.last_seen = Clock::now();
    if (!rendezvous_done_ && joined_locked() == opts_.world_size) {
      rendezvous_done_ = true;
      if (state_ == pb::RENDEZVOUS)
        state_ = pb::RUNNING;
      for (auto& x : workers_)
        x.last_seen = Clock::now();
      cv_.notify_all();
    }
    const auto deadline =
        Clock::now() + std::min(milliseconds(req->wait_ms()), kMaxWait);
    cv_.wait_until(lock, deadline, [&] {
      return rendezvous_done_ || !failure_.empty() || shutting_down_;
    });
    if (!failure_.empty())
      return grpc::Status(grpc::ABORTED, failure_);
    if (shutting_down_)
      return shutting_down_status();
    resp->set_complete(rendezvous_done_);
    resp->set_joined(joined_locked());
    for (int r = 0; r < opts_.world_size; ++r) {
      if (!workers_[r].joined)
        resp->add_missing(r);
    }
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const pb::HeartbeatRequest* req,
                         pb::HeartbeatResponse* resp) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
    if (auto s = check_rank(req->rank()); !s.ok())
      return s;
    std::lock_guard<std::mutex> lock(mu_);
    Worker& w = workers_[req->rank()];
    if (!w.joined) {
      return grpc::Status(
          grpc::FAILED_PRECONDITION,
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

  grpc::Status Finish(grpc::ServerContext* ctx,
                      const pb::FinishRequest* req,
                      pb::FinishResponse*) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
    if (auto s = check_rank(req->rank()); !s.ok())
      return s;
    std::lock_guard<std::mutex> lock(mu_);
    Worker& w = workers_[req->rank()];
    w.finished = true;
    w.exit_code = req->exit_code();
    w.report.set_step(std::max(w.report.step(), req->step()));
    if (w.exit_code != 0 && failure_.empty()) {
      fail_locked(name_locked(req->rank()) + " exited with code " +
                  std::to_string(w.exit_code) + " at step " +
                  std::to_string(w.report.step()));
    }
    bool all = true;
    for (const auto& x : workers_)
      all = all && x.finished;
    if (all && failure_.empty())
      state_ = pb::FINISHED;
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Store(grpc::ServerContext* ctx,
                     const pb::StoreRequest* req,
                     pb::StoreResponse* resp) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
    const auto& keys = req->keys();
    const bool one_key = keys.size() == 1;
    auto bad = [](const char* what) {
      return grpc::Status(grpc::INVALID_ARGUMENT, what);
    };
    auto abort = [this] { return failed_.load() || shutting_down_.load(); };
    switch (req->op()) {
      case pb::StoreRequest::SET:
        if (!one_key)
          return bad("SET takes one key");
        kv_.set(keys[0], {req->value().begin(), req->value().end()});
        resp->set_ok(true);
        return grpc::Status::OK;
      case pb::StoreRequest::GET:
      case pb::StoreRequest::WAIT: {
        if (req->op() == pb::StoreRequest::GET && !one_key) {
          return bad("GET takes one key");
        }
        const std::vector<std::string> want(keys.begin(), keys.end());
        const auto missing = kv_.wait(
            want,
            Clock::now() + std::min(milliseconds(req->wait_ms()), kMaxWait),
            abort);
        if (!missing.empty() && abort())
          return abort_status();
        resp->set_ok(missing.empty());
        for (const auto& k : missing)
          resp->add_missing(k);
        if (missing.empty() && req->op() == pb::StoreRequest::GET) {
          auto v = kv_.get(keys[0]);
          if (v)
            resp->set_value(std::string(v->begin(), v->end()));
        }
        return grpc::Status::OK;
      }
      case pb::StoreRequest::ADD:
        if (!one_key)
          return bad("ADD takes one key");
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
        if (!one_key)
          return bad("REMOVE takes one key");
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

  grpc::Status Status(grpc::ServerContext* ctx,
                      const pb::StatusRequest*,
                      pb::JobStatus* resp) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
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
        out->set_last_heartbeat_secs(
            std::chrono::duration<double>(now - w.last_seen).count());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Stop(grpc::ServerContext* ctx,
                    const pb::StopRequest* req,
                    pb::StopResponse* resp) override {
    if (auto s = authorize(ctx); !s.ok())
      return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_reason_.empty())
      stop_reason_ = req->reason().empty() ? "requested" : req->reason();
    request_stop_locked();
    resp->set_state(state_);
    return grpc::Status::OK;
  }

  /// Marks silent workers lost; runs until shutdown.
  void monitor() {
    const milliseconds period = std::clamp(
        opts_.worker_timeout / 10, milliseconds(20), milliseconds(500));
    std::unique_lock<std::mutex> lock(mu_);
    while (!shutting_down_) {
      cv_.wait_for(lock, period, [&] { return shutting_down_.load(); });
      if (!rendezvous_done_ || !failure_.empty())
        continue;
      const auto now = Clock::now();
      for (int r = 0; r < opts_.world_size; ++r) {
        Worker& w = workers_[r];
        if (w.finished || w.lost || now - w.last_seen <= opts_.worker_timeout)
          continue;
        w.lost = true;
        fail_locked(name_locked(r) + " lost at step " +
                    std::to_string(w.report.step()) + ": no heartbeat for " +
                    seconds_text(opts_.worker_timeout));
        break;
      }
    }
  }

  void drain(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& w : workers_) {
        if (!w.joined || w.finished || w.lost)
          continue;
        if (failure_.empty() || !w.heard_failure)
          return false;
      }
      return true;
    });
  }

  void abort(const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty())
      fail_locked(message);
  }

  void begin_shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    kv_.notify_all();
  }

 private:
  grpc::Status authorize(grpc::ServerContext* ctx) const {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end() ||
        !same_secret(std::string(it->second.data(), it->second.size()),
                     "Bearer " + opts_.token)) {
      return grpc::Status(grpc::UNAUTHENTICATED,
                          it == md.end() ? "no job token" : "wrong job token");
    }
    return grpc::Status::OK;
  }

  grpc::Status check_rank(int rank) const {
    if (rank < 0 || rank >= opts_.world_size) {
      return grpc::Status(grpc::INVALID_ARGUMENT,
                          "rank " + std::to_string(rank) +
                              " is out of range (world size " +
                              std::to_string(opts_.world_size) + ")");
    }
    return grpc::Status::OK;
  }

  grpc::Status shutting_down_status() const {
    return grpc::Status(grpc::UNAVAILABLE, "coordinator shutting down");
  }

  grpc::Status abort_status() {
    if (shutting_down_)
      return shutting_down_status();
    std::lock_guard<std::mutex> lock(mu_);
    return grpc::Status(grpc::ABORTED, failure_);
  }

  int joined_locked() const {
    return static_cast<int>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) {
          return w.joined;
        }));
  }

  std::string name_locked(int rank) const {
    const Worker& w = workers_[rank];
    return "worker " + std::to_string(rank) + " (" + w.host + ":" +
           std::to_string(w.pid) + ")";
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
};

}  // namespace

int pick_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw DistributedError("pick_free_port: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok)
    throw DistributedError("pick_free_port: no free port");
  return ntohs(addr.sin_port);
}

std::string listen_host_for(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  const bool loopback =
      host == "localhost" ||
      (inet_pton(AF_INET, host.c_str(), &v4) == 1 &&
       (ntohl(v4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, host.c_str(), &v6) == 1 &&
       IN6_IS_ADDR_LOOPBACK(&v6));
  return loopback ? host : "0.0.0.0";
}

std::string read_text_file(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ConfigError(key + ": cannot read " + config::quote_value(path));
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct CoordinatorServer::Impl {
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  std::thread monitor;
  std::string host;  // as in a gRPC address: IPv6 in brackets
  int port = 0;
  std::once_flag stopped;
};

CoordinatorServer::CoordinatorServer(const CoordinatorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  if (options.world_size < 1) {
    throw ConfigError("coordinator: world size must be >= 1");
  }
  if (options.token.empty()) {
    throw ConfigError("coordinator: the job token is empty");
  }
  std::shared_ptr<grpc::ServerCredentials> creds =
      grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {read_text_file(options.tls_key_file, "tls_key_file"),
         read_text_file(options.tls_cert_file, "tls_cert_file")});
    creds = grpc::SslServerCredentials(ssl);
  }
  impl_->service = std::make_unique<Service>(options);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl_->host = options.host.find(':') == std::string::npos
                    ? options.host
                    : "[" + options.host + "]";
  const std::string listen = impl_->host + ":" + std::to_string(options.port);
  builder.AddListeningPort(listen, creds, &impl_->port);
  builder.RegisterService(impl_->service.get());
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0) {
    throw DistributedError("coordinator: cannot listen on " + listen +
                           " (in use, or not allowed)");
  }
  if (auto* health = impl_->server->GetHealthCheckService()) {
    health->SetServingStatus(kServiceName, true);
  }
  impl_->monitor = std::thread([s = impl_->service.get()] { s->monitor(); });
}

CoordinatorServer::~CoordinatorServer() {
  shutdown();
}

int CoordinatorServer::port() const {
  return impl_->port;
}

std::string CoordinatorServer::address() const {
  return impl_->host + ":" + std::to_string(impl_->port);
}

std::string CoordinatorServer::local_address() const {
  return impl_->host == "0.0.0.0" ? "127.0.0.1:" + std::to_string(impl_->port)
                                  : address();
}

void CoordinatorServer::drain(std::chrono::milliseconds timeout) {
  impl_->service->drain(timeout);
}

void CoordinatorServer::abort(const std::string& message) {
  impl_->service->abort(message);
}

void CoordinatorServer::shutdown() {
  std::call_once(impl_->stopped, [this] {
    if (auto* health = impl_->server->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    impl_->service->begin_shutdown();
    impl_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::seconds(1));
    impl_->server->Wait();
    if (impl_->monitor.joinable())
      impl_->monitor.join();
  });
}

}  // namespace fastnn::dist
