// fastnn_job status|stop|health --coordinator HOST:PORT [--token_file FILE]
// Talks to a running job's coordinator. Exit codes: 0 done, 2 usage,
// 5 coordinator unreachable or the call refused (README.md, "Exit codes").
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "fastnn/errors.h"
#include "fastnn/health.grpc.pb.h"
#include "src/dist/client.h"
#include "src/dist/cluster.h"
#include "src/dist/coordinator.h"
#include "src/log/failure.h"

namespace {

namespace dist = fastnn::dist;
namespace pb = fastnn::dist::proto;

std::string duration_text(double secs) {
  if (secs < 0) return "-";
  const long s = static_cast<long>(secs + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", s);
  }
  return buf;
}

void print_status(const pb::JobStatus& st) {
  std::printf("job %s: %d workers, up %s%s\n", pb::JobState_Name(st.state()).c_str(),
              st.world_size(), duration_text(st.uptime_secs()).c_str(),
              st.stop_requested() ? (", stop requested (" + st.stop_reason() + ")").c_str() : "");
  if (!st.failure().empty()) std::printf("failure: %s\n", st.failure().c_str());
  std::printf("%-5s %-9s %-28s %10s %10s %12s %9s %10s\n", "rank", "state", "host:pid", "step",
              "loss", "images/sec", "ETA", "heartbeat");
  for (const auto& w : st.workers()) {
    const std::string who = w.host().empty() ? "-" : w.host() + ":" + std::to_string(w.pid());
    std::string state = w.state();
    if (state == "finished") state += "(" + std::to_string(w.exit_code()) + ")";
    char beat[32] = "-";
    if (w.state() != "missing") {
      std::snprintf(beat, sizeof beat, "%.1fs ago", w.last_heartbeat_secs());
    }
    std::printf("%-5d %-9s %-28s %10lld %10.4f %12.1f %9s %10s\n", w.rank(), state.c_str(),
                who.c_str(), static_cast<long long>(w.report().step()), w.report().loss(),
                w.report().images_per_sec(), duration_text(w.report().eta_secs()).c_str(), beat);
  }
}

// The job token: --token_file's (trailing whitespace dropped), else
// FASTNN_JOB_TOKEN's; none for a health check.
std::string job_token(const std::string& token_file, bool health) {
  std::string token;
  if (!token_file.empty()) {
    token = dist::read_text_file(token_file, "--token_file");
    token.erase(token.find_last_not_of(" \t\r\n") + 1);
  } else if (const char* env_token = std::getenv("FASTNN_JOB_TOKEN")) {
    token = env_token;
  }
  if (token.empty() && !health) {
    throw fastnn::ConfigError("no job token: set FASTNN_JOB_TOKEN or pass --token_file");
  }
  return token;
}

int check_health(dist::CoordinatorClient& client, std::chrono::seconds deadline) {
  auto stub = grpc::health::v1::Health::NewStub(client.channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status rpc_status = stub->Check(&ctx, {}, &resp);
  if (!rpc_status.ok()) throw fastnn::DistributedError(client.explain(rpc_status, "health"));
  std::printf("%s\n",
              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status()).c_str());
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? fastnn::kExitOk
                                                                         : fastnn::kExitDistributed;
}

int show_status(dist::CoordinatorClient& client, std::chrono::seconds deadline) {
  pb::JobStatus st;
  auto ctx = client.context(deadline, /*wait_for_ready=*/false);
  grpc::Status rpc_status = client.stub().Status(ctx.get(), {}, &st);
  if (!rpc_status.ok()) throw fastnn::DistributedError(client.explain(rpc_status, "status"));
  print_status(st);
  return fastnn::kExitOk;
}

int request_stop(dist::CoordinatorClient& client, std::chrono::seconds deadline,
                 const std::string& reason) {
  pb::StopRequest req;
  req.set_reason(reason);
  pb::StopResponse resp;
  auto ctx = client.context(deadline, /*wait_for_ready=*/false);
  grpc::Status rpc_status = client.stub().Stop(ctx.get(), req, &resp);
  if (!rpc_status.ok()) throw fastnn::DistributedError(client.explain(rpc_status, "stop"));
  std::printf("stop requested; job %s\n", pb::JobState_Name(resp.state()).c_str());
  return fastnn::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Status, graceful stop and health of a running FastNN job.", "fastnn_job"};
  app.set_version_flag("--version", std::string("fastnn_job ") + FASTNN_VERSION);
  app.require_subcommand(1);
  std::string address, token_file, ca_file, reason = "fastnn_job stop";
  int timeout_secs = 10;
  auto common = [&](CLI::App* sub) {
    sub->add_option("--coordinator", address,
                    "host:port of the chief's coordinator (MASTER_ADDR:"
                    "MASTER_PORT)")
        ->required();
    sub->add_option("--token_file", token_file,
                    "file holding the job token; default: FASTNN_JOB_TOKEN");
    sub->add_option("--tls_ca_file", ca_file, "PEM CA bundle when the coordinator serves TLS");
    sub->add_option("--timeout_secs", timeout_secs, "call deadline")->check(CLI::PositiveNumber);
  };
  CLI::App* status =
      app.add_subcommand("status", "each worker's step, loss, images/sec, ETA and the job state");
  CLI::App* stop =
      app.add_subcommand("stop",
                         "request a graceful stop: every worker stops at the same step, "
                         "checkpoints and exits 0");
  CLI::App* health =
      app.add_subcommand("health", "grpc.health.v1 check (no token); exit 0 when SERVING");
  for (CLI::App* sub : {status, stop, health}) common(sub);
  stop->add_option("--reason", reason, "shown by fastnn_job status");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? fastnn::kExitOk : fastnn::kExitUsage;
  }

  try {
    dist::split_host_port(address, "--coordinator");
    dist::ClientOptions co;
    co.address = address;
    co.tls_ca_file = ca_file;
    co.token = job_token(token_file, health->parsed());
    dist::CoordinatorClient client(co);
    const auto deadline = std::chrono::seconds(timeout_secs);
    if (health->parsed()) return check_health(client, deadline);
    if (status->parsed()) return show_status(client, deadline);
    return request_stop(client, deadline, reason);
  } catch (...) {
    return fastnn::report_failure("fastnn_job", fastnn::failure_of(std::current_exception()));
  }
}
