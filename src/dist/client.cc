#include "src/dist/client.h"

#include "src/dist/cluster.h"
#include "src/dist/coordinator.h"

namespace fastnn::dist {

bool transient(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::UNAVAILABLE:
    case grpc::DEADLINE_EXCEEDED:
    case grpc::CANCELLED:
      return true;
    default:
      return overloaded(status);
  }
}

bool overloaded(const grpc::Status& status) {
  // gRPC's synchronous server answers this (its wording since 1.x) when its
  // resource quota has no thread left; the handler never ran.
  return status.error_code() == grpc::RESOURCE_EXHAUSTED &&
         status.error_message().find("Threadpool Exhausted") != std::string::npos;
}

CoordinatorClient::CoordinatorClient(const ClientOptions& options) : options_(options) {
  grpc::ChannelArguments args;
  // gRPC's reconnect backoff grows to 2 minutes by default; a worker that
  // starts before the chief must see it within the rendezvous deadline.
  // (GRPC_ARG_MIN_RECONNECT_BACKOFF_MS stays at its default: it is also the
  // connect timeout, and a short one fails every handshake on a busy host.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A failed connection asks for re-resolution, which the DNS resolver
  // otherwise holds back for 30 s.
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 500);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = read_text_file(options.tls_ca_file, "tls_ca_file");
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_target_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_target_name);
    }
  }
  channel_ = grpc::CreateCustomChannel(options.address, creds, args);
  stub_ = proto::Coordinator::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> CoordinatorClient::context(std::chrono::milliseconds timeout,
                                                                bool wait_for_ready) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_wait_for_ready(wait_for_ready);
  ctx->AddMetadata("authorization", "Bearer " + options_.token);
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

std::string CoordinatorClient::explain(const grpc::Status& status, const std::string& what) const {
  const std::string head = "coordinator " + options_.address + ": " + what;
  switch (status.error_code()) {
    case grpc::UNAUTHENTICATED:
      return head + " refused (" + status.error_message() +
             "): every worker and fastnn_job need the job's token "
             "(FASTNN_JOB_TOKEN or job_token_file / --token_file)";
    case grpc::UNAVAILABLE:
      return head + " failed: unreachable (" + status.error_message() + ")";
    case grpc::DEADLINE_EXCEEDED:
      return head + " failed: no answer in time";
    default:
      return head + " failed: " + status.error_message() + " (gRPC code " +
             std::to_string(status.error_code()) + ")";
  }
}

}  // namespace fastnn::dist
