#include "src/dist/session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/config/job_settings.h"
#include "src/config/value_parse.h"
#include "src/dist/client.h"
#include "src/dist/coordinator.h"
#include "src/dist/kv_core.h"

namespace fastnn::dist {
namespace {

namespace pb = proto;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Slack on top of a long poll's wait for the call's own deadline.
constexpr milliseconds kCallSlack{5000};

std::string seconds_text(milliseconds d) {
  const auto s = std::chrono::duration<double>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, s == static_cast<int64_t>(s) ? "%.0f s" : "%.1f s", s);
  return buf;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "'" : ", '") + k + "'";
  return out;
}

/// A one-process job's store: the same semantics, no server.
class LocalStore final : public KeyValueStore {
 public:
  explicit LocalStore(milliseconds timeout) : timeout_(timeout) {}
  void set(const std::string& key, const std::vector<uint8_t>& v) override { core_.set(key, v); }
  std::vector<uint8_t> get(const std::string& key) override {
    wait({key}, timeout_);
    return *core_.get(key);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    try {
      return core_.add(key, delta);
    } catch (const std::invalid_argument& e) {
      throw DistributedError(e.what());
    }
  }
  bool check(const std::vector<std::string>& keys) override { return core_.check(keys); }
  void wait(const std::vector<std::string>& keys, milliseconds timeout) override {
    auto missing = core_.wait(keys, Clock::now() + timeout, nullptr);
    if (!missing.empty()) {
      throw DistributedError("store: " + join_keys(missing) + " not set within " +
                             seconds_text(timeout));
    }
  }
  bool remove(const std::string& key) override { return core_.remove(key); }
  int64_t num_keys() override { return core_.num_keys(); }
  milliseconds timeout() const override { return timeout_; }

 private:
  KvCore core_;
  milliseconds timeout_;
};

/// The coordinator's store over gRPC; GET and WAIT are server-side long
/// polls bounded by the caller's timeout, cut short when the job fails.
class GrpcStore final : public KeyValueStore {
 public:
  GrpcStore(CoordinatorClient& client, milliseconds timeout) : client_(client), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<uint8_t>& v) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::SET);
    req.add_keys(key);
    req.set_value(std::string(v.begin(), v.end()));
    call(req, "store set('" + key + "')");
  }
  std::vector<uint8_t> get(const std::string& key) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::GET);
    req.add_keys(key);
    req.set_wait_ms(timeout_.count());
    pb::StoreResponse resp = call(req, "store get('" + key + "')");
    if (!resp.ok()) {
      throw DistributedError("store: '" + key + "' not set within " + seconds_text(timeout_));
    }
    return {resp.value().begin(), resp.value().end()};
  }
  int64_t add(const std::string& key, int64_t delta) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::ADD);
    req.add_keys(key);
    req.set_delta(delta);
    return call(req, "store add('" + key + "')").number();
  }
  bool check(const std::vector<std::string>& keys) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::CHECK);
    for (const auto& k : keys) req.add_keys(k);
    return call(req, "store check").ok();
  }
  void wait(const std::vector<std::string>& keys, milliseconds timeout) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::WAIT);
    for (const auto& k : keys) req.add_keys(k);
    req.set_wait_ms(timeout.count());
    pb::StoreResponse resp = call(req, "store wait");
    if (!resp.ok()) {
      throw DistributedError("store: " + join_keys({resp.missing().begin(), resp.missing().end()}) +
                             " not set within " + seconds_text(timeout));
    }
  }
  bool remove(const std::string& key) override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::REMOVE);
    req.add_keys(key);
    return call(req, "store remove('" + key + "')").ok();
  }
  int64_t num_keys() override {
    pb::StoreRequest req;
    req.set_op(pb::StoreRequest::NUM_KEYS);
    return call(req, "store num_keys").number();
  }
  milliseconds timeout() const override { return timeout_; }

 private:
  pb::StoreResponse call(const pb::StoreRequest& req, const std::string& what) {
    auto ctx =
        client_.context((req.wait_ms() > 0 ? milliseconds(req.wait_ms()) : timeout_) + kCallSlack);
    pb::StoreResponse resp;
    grpc::Status s = client_.stub().Store(ctx.get(), req, &resp);
    // An overloaded server ran nothing: try again (a fresh context each
    // time) until the call's own deadline has passed.
    const auto until = Clock::now() + timeout_;
    while (overloaded(s) && Clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(50));
      resp.Clear();
      auto retry = client_.context((req.wait_ms() > 0 ? milliseconds(req.wait_ms()) : timeout_) +
                                   kCallSlack);
      s = client_.stub().Store(retry.get(), req, &resp);
    }
    if (s.error_code() == grpc::ABORTED) {
      throw DistributedError(what + " aborted: " + s.error_message());
    }
    if (!s.ok()) throw DistributedError(client_.explain(s, what));
    return resp;
  }

  CoordinatorClient& client_;
  milliseconds timeout_;
};

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::string make_job_token() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char raw[16] = {};
  if (!in.read(reinterpret_cast<char*>(raw), sizeof raw)) {
    throw DistributedError("cannot read /dev/urandom for the job's token");
  }
  std::string hex;
  char buf[3];
  for (unsigned char c : raw) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    hex += buf;
  }
  return hex;
}

namespace {

std::string local_job_token_dir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  return std::string(runtime && *runtime ? runtime : "/tmp") + "/fastnn-" +
         std::to_string(getuid());
}

std::string local_job_token_path(const ClusterSpec& spec) {
  std::string id;
  for (char c : spec.local_job_id) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return local_job_token_dir() + "/job-" + id + ".token";
}

}  // namespace

std::string local_job_token(const ClusterSpec& spec, std::chrono::milliseconds timeout) {
  const std::string dir = local_job_token_dir();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw DistributedError("cannot create " + dir +
                           " for the job's token: " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    throw DistributedError(dir +
                           " must be a directory of this user's only (mode 0700) to "
                           "share the job's token; set FASTNN_JOB_TOKEN instead");
  }
  const std::string path = local_job_token_path(spec);
  if (spec.is_chief()) {
    const std::string token = make_job_token();
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, token.data(), token.size()) != static_cast<ssize_t>(token.size()) ||
        close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
      throw DistributedError("cannot write the job's token to " + path + ": " +
                             std::strerror(errno));
    }
    return token;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path);
    std::string token;
    if (in >> token && token.size() == 32) return token;
    if (std::chrono::steady_clock::now() > deadline) {
      throw DistributedError("rank " + std::to_string(spec.rank) + ": rank 0 wrote no token to " +
                             path + " within " + seconds_text(timeout) +
                             " (every rank must run on this host as the same user)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

SessionOptions session_options(const HParams& hp, const Environment& env) {
  SessionOptions o;
  o.worker_timeout = std::chrono::seconds(hp.worker_timeout_secs);
  if (!hp.job_token_file.empty()) {
    o.token = std::string(config::trim(read_text_file(hp.job_token_file, "job_token_file")));
    if (o.token.empty()) {
      throw ConfigError("job_token_file: '" + hp.job_token_file + "' is empty");
    }
  } else if (auto it = env.find("FASTNN_JOB_TOKEN"); it != env.end()) {
    o.token = std::string(config::trim(it->second));
  }
  o.tls_cert_file = hp.tls_cert_file;
  o.tls_key_file = hp.tls_key_file;
  o.tls_ca_file = hp.tls_ca_file;
  o.job_settings = config::job_settings(hp);
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    throw ConfigError(std::string(o.tls_cert_file.empty() ? "tls_key_file" : "tls_cert_file") +
                      " is set without " +
                      (o.tls_cert_file.empty() ? "tls_cert_file" : "tls_key_file"));
  }
  if (!o.tls_cert_file.empty() && o.tls_ca_file.empty()) {
    throw ConfigError(
        "tls_cert_file is set without tls_ca_file: every worker, the chief "
        "included, verifies the coordinator with tls_ca_file");
  }
  return o;
}

struct WorkerSession::Impl {
  ClusterSpec spec;
  SessionOptions opts;
  /// Rank 0 of a single-host job: the token file it wrote (removed at the end).
  std::string token_file;
  std::unique_ptr<CoordinatorServer> server;
  std::unique_ptr<CoordinatorClient> client;
  std::unique_ptr<KeyValueStore> store;
  std::thread heartbeat;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                    // ends the heartbeat thread
  grpc::ClientContext* inflight = nullptr;  // its call, to cancel on stop
  bool stop_pending = false;                // request_stop() not yet sent
  bool finished = false;
  std::atomic<bool> stop_requested{false};
  std::optional<std::string> failure;
  WorkerReport report;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
      if (inflight) inflight->TryCancel();
    }
    cv.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
  }

  /// Takes `given`, with the token rank 0 shares through a file when every
  /// worker runs on this host; ConfigError when there is still no token.
  void take_options(const SessionOptions& given) {
    SessionOptions options = given;
    if (options.token.empty() && !spec.local_job_id.empty()) {
      options.token = local_job_token(spec, options.worker_timeout);
      if (spec.is_chief()) token_file = local_job_token_path(spec);
    }
    opts = options;
    if (options.token.empty()) {
      throw ConfigError(
          "distributed training needs the job's shared token: set "
          "FASTNN_JOB_TOKEN or job_token_file on every worker (the "
          "nproc_per_node launcher makes one)");
    }
  }

  /// Starts the coordinator (rank 0), then the client and the store.
  void connect() {
    auto [host, port] = split_host_port(spec.coordinator, "coordinator");
    ClientOptions co;
    co.address = spec.coordinator;
    co.token = opts.token;
    co.tls_ca_file = opts.tls_ca_file;
    if (spec.is_chief()) start_server(host, port, co);
    client = std::make_unique<CoordinatorClient>(co);
    store = std::make_unique<GrpcStore>(*client, opts.worker_timeout);
  }

  /// Rank 0's coordinator on `port` (0: any free one); the spec then names
  /// the port bound, and `co` dials it on this machine.
  void start_server(const std::string& host, int port, ClientOptions& co) {
    CoordinatorOptions so;
    so.port = port;
    so.host = listen_host_for(host);
    so.world_size = spec.world_size;
    so.worker_timeout = opts.worker_timeout;
    so.token = opts.token;
    so.tls_cert_file = opts.tls_cert_file;
    so.tls_key_file = opts.tls_key_file;
    server = std::make_unique<CoordinatorServer>(so);
    const std::string bound = std::to_string(server->port());
    spec.coordinator =
        (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + bound;
    co.address = server->local_address();
    co.tls_target_name = host;
  }

  /// rendezvous(); on failure rank 0 first tells the workers still waiting
  /// why, before the server goes away.
  void rendezvous_or_abort() {
    try {
      rendezvous();
    } catch (const DistributedError& e) {
      if (server) server->abort(e.what());
      throw;
    }
  }

  /// compare_settings(), failing like rendezvous_or_abort().
  std::string compare_settings_or_abort() {
    try {
      return compare_settings();
    } catch (const DistributedError& e) {
      if (server) server->abort(e.what());
      throw;
    }
  }

  void rendezvous() {
    const auto deadline = Clock::now() + opts.worker_timeout;
    std::string last_error;
    bool reached = false;
    pb::JoinResponse last;
    while (Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      const milliseconds wait = std::min(left, milliseconds(2000));
      pb::JoinRequest req;
      req.set_rank(spec.rank);
      req.set_world_size(spec.world_size);
      req.set_host(hostname());
      req.set_pid(getpid());
      req.set_wait_ms(wait.count());
      pb::JoinResponse resp;
      auto ctx = client->context(wait + milliseconds(1000));
      grpc::Status status = client->stub().Join(ctx.get(), req, &resp);
      if (status.ok()) {
        reached = true;
        last = resp;
        if (resp.complete()) return;
        continue;
      }
      if (status.error_code() == grpc::ABORTED) {
        throw DistributedError("rendezvous aborted: " + status.error_message());
      }
      if (!transient(status)) {
        throw DistributedError(client->explain(status, "rendezvous"));
      }
      last_error = client->explain(status, "rendezvous");
      std::this_thread::sleep_for(std::min(
          milliseconds(200),
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now() + milliseconds(1))));
    }
    const std::string after = " after " + seconds_text(opts.worker_timeout);
    if (!reached) {
      throw DistributedError("rendezvous failed" + after + ": coordinator " + spec.coordinator +
                             " unreachable (last error: " + last_error + ")");
    }
    throw timed_out(last, after);
  }

  /// The error of a rendezvous that reached the coordinator but not every
  /// worker: who joined and who is missing, from the last reply.
  DistributedError timed_out(const pb::JoinResponse& last, const std::string& after) const {
    // The reply lists the first few missing ranks; the rest are counted.
    const int64_t count = std::max<int64_t>(spec.world_size - last.joined(), 0);
    std::string missing;
    for (int i = 0; i < last.missing_size() && i < kMaxListedRanks; ++i) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(last.missing(i));
    }
    const int64_t listed = std::min<int64_t>(last.missing_size(), kMaxListedRanks);
    if (count > listed) missing += " and " + std::to_string(count - listed) + " more";
    return DistributedError("rendezvous timed out" + after + ": " + std::to_string(last.joined()) +
                            " of " + std::to_string(spec.world_size) +
                            " workers joined; missing rank" + (count > 1 ? "s " : " ") + missing +
                            " (coordinator " + spec.coordinator + ")");
  }

  /// Every worker compares its settings with rank 0's (a hash first, the
  /// text only when the hashes differ); a worker that differs publishes the
  /// differences. Once all have checked, and, on a difference, all have
  /// read it, every worker returns the message ("" when all agree).
  std::string compare_settings() {
    const std::string kText = "fastnn/settings/text", kHash = "fastnn/settings/hash",
                      kDiff = "fastnn/settings/differences";
    KeyValueStore& kv = *store;
    uint64_t digest = 14695981039346656037ull;  // FNV-1a
    for (unsigned char byte : opts.job_settings) digest = (digest ^ byte) * 1099511628211ull;
    const std::vector<uint8_t> hash(reinterpret_cast<const uint8_t*>(&digest),
                                    reinterpret_cast<const uint8_t*>(&digest) + sizeof digest);
    if (spec.is_chief()) {
      kv.set(kText, {opts.job_settings.begin(), opts.job_settings.end()});
      kv.set(kHash, hash);
    } else if (kv.get(kHash) != hash) {
      const std::vector<uint8_t> chief = kv.get(kText);
      const std::string diff =
          "rank " + std::to_string(spec.rank) + " differs from rank 0: " +
          config::describe_differences(opts.job_settings, std::string(chief.begin(), chief.end()));
      kv.set(kDiff, {diff.begin(), diff.end()});
    }
    // A counter and a key its last increment sets: one wait per worker,
    // whatever the world size.
    auto all_reach = [&](const std::string& name) {
      if (kv.add(name, 1) == spec.world_size) kv.set(name + "/all", {1});
      kv.wait({name + "/all"}, opts.worker_timeout);
    };
    all_reach("fastnn/settings/checked");
    if (!kv.check({kDiff})) return "";
    const std::vector<uint8_t> diff = kv.get(kDiff);
    // Nobody exits (which fails the job) before every worker has read it.
    all_reach("fastnn/settings/read");
    return std::string(diff.begin(), diff.end());
  }

  void heartbeat_loop() {
    const milliseconds call_timeout = std::min<milliseconds>(
        std::max(opts.heartbeat_interval * 2, milliseconds(1000)), opts.worker_timeout);
    auto last_ok = Clock::now();
    std::string last_error;
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, opts.heartbeat_interval, [&] { return stopping || stop_pending; });
      if (stopping) break;
      pb::HeartbeatRequest req;
      req.set_rank(spec.rank);
      req.mutable_report()->set_step(report.step);
      req.mutable_report()->set_loss(report.loss);
      req.mutable_report()->set_images_per_sec(report.images_per_sec);
      req.mutable_report()->set_eta_secs(report.eta_secs);
      req.set_request_stop(stop_pending);
      pb::HeartbeatResponse resp;
      auto ctx = client->context(call_timeout);
      inflight = ctx.get();
      lock.unlock();
      grpc::Status status = client->stub().Heartbeat(ctx.get(), req, &resp);
      lock.lock();
      inflight = nullptr;
      if (stopping) break;
      const auto now = Clock::now();
      if (status.ok()) {
        last_ok = now;
        if (req.request_stop()) stop_pending = false;
        if (resp.stop_requested()) stop_requested = true;
        if (!resp.failure().empty() && !failure) failure = resp.failure();
        continue;
      }
      last_error = client->explain(status, "heartbeat");
      if (!failure && !transient(status)) {
        failure = last_error;
      } else if (!failure && now - last_ok > opts.worker_timeout) {
        failure = "coordinator " + spec.coordinator + " lost: no response for " +
                  seconds_text(opts.worker_timeout) + " (" + last_error + ")";
      }
    }
  }
};

WorkerSession::WorkerSession(const ClusterSpec& spec, const SessionOptions& given)
    : impl_(std::make_unique<Impl>()) {
  impl_->spec = spec;
  if (!spec.distributed()) {
    impl_->opts = given;
    impl_->store = std::make_unique<LocalStore>(given.worker_timeout);
    return;
  }
  impl_->take_options(given);
  impl_->connect();
  impl_->rendezvous_or_abort();
  impl_->heartbeat = std::thread([impl = impl_.get()] { impl->heartbeat_loop(); });
  if (impl_->opts.job_settings.empty()) return;
  const std::string differences = impl_->compare_settings_or_abort();
  if (!differences.empty()) {
    finish(kExitUsage);
    if (!impl_->token_file.empty()) std::remove(impl_->token_file.c_str());
    throw ConfigError(
        "the workers' settings differ (every key but per-rank ones such as "
        "task_index, device, train_dir, dataset_dir and thread counts must "
        "match): " +
        differences);
  }
}

WorkerSession::~WorkerSession() {
  if (!impl_) return;
  finish(kExitInternal);
  if (!impl_->token_file.empty()) std::remove(impl_->token_file.c_str());
}

const ClusterSpec& WorkerSession::spec() const { return impl_->spec; }

KeyValueStore& WorkerSession::store() { return *impl_->store; }

void WorkerSession::report(const WorkerReport& r) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->report = r;
}

bool WorkerSession::stop_requested() const { return impl_->stop_requested; }

std::optional<std::string> WorkerSession::failure() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->failure;
}

void WorkerSession::request_stop() {
  if (!impl_->client) {
    impl_->stop_requested = true;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_pending = true;
  }
  impl_->cv.notify_all();
}

void WorkerSession::finish(int exit_code) {
  Impl& impl = *impl_;
  int64_t step = 0;
  bool coordinator_lost = false, job_failed = false;
  {
    std::lock_guard<std::mutex> lock(impl.mu);
    if (impl.finished) return;
    impl.finished = true;
    impl.stopping = true;
    if (impl.inflight) impl.inflight->TryCancel();  // do not wait out an unanswered heartbeat
    step = impl.report.step;
    coordinator_lost = impl.failure && impl.failure->rfind("coordinator ", 0) == 0;
    job_failed = impl.failure.has_value();
  }
  impl.cv.notify_all();
  if (impl.heartbeat.joinable()) impl.heartbeat.join();
  if (!impl.client) return;
  if (!coordinator_lost) {
    pb::FinishRequest req;
    req.set_rank(impl.spec.rank);
    req.set_exit_code(exit_code);
    req.set_step(step);
    // Best effort, failing fast: the channel is up while heartbeats flow,
    // and a coordinator that already shut down must not delay the exit.
    // Unreported, the worker is taken for lost later, which a finishing
    // job no longer minds. After a failure the chief has stopped waiting
    // for it: one attempt.
    const auto until = Clock::now() + milliseconds(job_failed ? 0 : 1000);
    for (;;) {
      pb::FinishResponse resp;
      auto ctx = impl.client->context(milliseconds(1000),
                                      /*wait_for_ready=*/false);
      grpc::Status st = impl.client->stub().Finish(ctx.get(), req, &resp);
      if (st.error_code() != grpc::UNAVAILABLE || Clock::now() >= until) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  if (impl.server) {
    impl.server->drain(impl.opts.worker_timeout);
    impl.server->shutdown();
  }
}

}  // namespace fastnn::dist
