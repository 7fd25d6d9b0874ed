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
#include "src/dist/coordinator_service.h"
#include "src/dist/kv_core.h"
#include "src/log/log.h"

namespace fastnn::dist {
namespace {

using detail::Service;

constexpr char kServiceName[] = "fastnn.dist.proto.Coordinator";

// Bounds on what any peer, with or without the token, can make the server
// hold (docs/reliability.md, "Untrusted peers").
/// Largest message either way; the store's values are addresses and ids.
constexpr int kMaxMessageBytes = 4 << 20;
/// Calls in flight on one connection.
constexpr int kMaxConcurrentStreams = 64;
/// A connection that has not finished its HTTP/2 (and TLS) handshake by
/// then is closed: raw garbage or a silent socket holds nothing for long.
constexpr int kHandshakeTimeoutMs = 10000;
/// Memory for the server's buffers, all connections together.
constexpr size_t kServerMemoryBytes = size_t{256} << 20;

/// Threads serving calls at once (each long poll holds one): room for
/// every worker's heartbeat, join and store calls, tools, and a flood's
/// short-lived calls; beyond it a call is refused unrun ("Threadpool
/// Exhausted"), which workers retry (client.h, overloaded()).
int max_server_threads(int world_size) { return 256 + 8 * world_size; }

}  // namespace

int pick_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw DistributedError("pick_free_port: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw DistributedError("pick_free_port: no free port");
  return ntohs(addr.sin_port);
}

std::string listen_host_for(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  const bool loopback =
      host == "localhost" ||
      (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
  return loopback ? host : "0.0.0.0";
}

std::string read_text_file(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(key + ": cannot read " + config::quote_value(path));
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
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({read_text_file(options.tls_key_file, "tls_key_file"),
                                      read_text_file(options.tls_cert_file, "tls_cert_file")});
    creds = grpc::SslServerCredentials(ssl);
  }
  impl_->service = std::make_unique<Service>(options);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
  grpc::ResourceQuota quota("fastnn-coordinator");
  quota.Resize(kServerMemoryBytes);
  quota.SetMaxThreads(max_server_threads(options.world_size));
  builder.SetResourceQuota(quota);
  impl_->host =
      options.host.find(':') == std::string::npos ? options.host : "[" + options.host + "]";
  const std::string listen = impl_->host + ":" + std::to_string(options.port);
  builder.AddListeningPort(listen, creds, &impl_->port);
  builder.RegisterService(impl_->service.get());
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0) {
    throw DistributedError("coordinator: cannot listen on " + listen + " (in use, or not allowed)");
  }
  if (auto* health = impl_->server->GetHealthCheckService()) {
    health->SetServingStatus(kServiceName, true);
  }
  impl_->monitor = std::thread([service = impl_->service.get()] { service->monitor(); });
}

CoordinatorServer::~CoordinatorServer() { shutdown(); }

int CoordinatorServer::port() const { return impl_->port; }

std::string CoordinatorServer::address() const {
  return impl_->host + ":" + std::to_string(impl_->port);
}

std::string CoordinatorServer::local_address() const {
  return impl_->host == "0.0.0.0" ? "127.0.0.1:" + std::to_string(impl_->port) : address();
}

void CoordinatorServer::drain(std::chrono::milliseconds timeout) { impl_->service->drain(timeout); }

void CoordinatorServer::abort(const std::string& message) { impl_->service->abort(message); }

void CoordinatorServer::shutdown() {
  std::call_once(impl_->stopped, [this] {
    if (auto* health = impl_->server->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    impl_->service->begin_shutdown();
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    impl_->server->Wait();
    if (impl_->monitor.joinable()) impl_->monitor.join();
    if (const int64_t refused = impl_->service->refused_calls(); refused > 0) {
      log::warning() << "coordinator: refused " << refused
                     << " call(s) without the right job token";
    }
  });
}

}  // namespace fastnn::dist
