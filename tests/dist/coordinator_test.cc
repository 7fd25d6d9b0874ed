// The coordinator and WorkerSession over real gRPC on localhost: rendezvous,
// the key-value store, lost workers, graceful stop, the token, health.
// Workers run as threads of this process; a "silent" worker is a raw client
// that joins and then stops heartbeating.
#include "src/dist/coordinator.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "fastnn/errors.h"
#include "fastnn/health.grpc.pb.h"
#include "src/dist/client.h"
#include "src/dist/kv_core.h"
#include "src/dist/session.h"
#include "tests/test_paths.h"

namespace fastnn::dist {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace pb = proto;

constexpr char kToken[] = "test-token-7f3a";

ClusterSpec spec_for(int rank, int world, int port) {
  ClusterSpec s;
  s.rank = rank;
  s.world_size = world;
  s.local_world_size = world;
  s.local_rank = rank;
  s.coordinator = "127.0.0.1:" + std::to_string(port);
  s.source = ClusterSource::kFlags;
  return s;
}

SessionOptions fast_options(std::chrono::seconds timeout = 3s) {
  SessionOptions o;
  o.worker_timeout = timeout;
  o.heartbeat_interval = 100ms;
  o.token = kToken;
  return o;
}

/// Starts `world` sessions in threads; returns them once all are built.
std::vector<std::unique_ptr<WorkerSession>> start_all(int world, int port,
                                                      const SessionOptions& o) {
  std::vector<std::future<std::unique_ptr<WorkerSession>>> f;
  for (int r = 0; r < world; ++r) {
    f.push_back(std::async(std::launch::async, [=] {
      return std::make_unique<WorkerSession>(spec_for(r, world, port), o);
    }));
  }
  std::vector<std::unique_ptr<WorkerSession>> out;
  for (auto& x : f) out.push_back(x.get());
  return out;
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

/// Polls `pred` every 20 ms for up to `limit`; returns the time it took.
template <typename P>
std::optional<std::chrono::milliseconds> wait_until(P pred, std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < limit) {
    if (pred()) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

/// A worker driven by hand: joins, heartbeats when told, then goes silent.
struct RawWorker {
  CoordinatorClient client;
  int rank, world;
  RawWorker(int port, int rank, int world, const std::string& token = kToken)
      : client({"127.0.0.1:" + std::to_string(port), token, "", ""}), rank(rank), world(world) {}
  grpc::Status join(pb::JoinResponse* resp, int64_t wait_ms = 100) {
    pb::JoinRequest req;
    req.set_rank(rank);
    req.set_world_size(world);
    req.set_host("fakehost");
    req.set_pid(4242);
    req.set_wait_ms(wait_ms);
    auto ctx = client.context(5s);
    return client.stub().Join(ctx.get(), req, resp);
  }
  /// Joins, retrying until the coordinator is up and rendezvous completes.
  void join_until_complete() {
    pb::JoinResponse resp;
    ASSERT_TRUE(wait_until([&] { return join(&resp, 200).ok() && resp.complete(); }, 10s));
  }
  pb::HeartbeatResponse heartbeat(int64_t step) {
    pb::HeartbeatRequest req;
    req.set_rank(rank);
    req.mutable_report()->set_step(step);
    pb::HeartbeatResponse resp;
    auto ctx = client.context(5s);
    EXPECT_TRUE(client.stub().Heartbeat(ctx.get(), req, &resp).ok());
    return resp;
  }
};

TEST(CoordinatorTest, RendezvousAndKeyValueStore) {
  const int port = pick_free_port();
  auto w = start_all(3, port, fast_options());
  ASSERT_EQ(w.size(), 3u);
  for (auto& s : w) EXPECT_FALSE(s->failure().has_value());

  KeyValueStore& a = w[1]->store();
  KeyValueStore& b = w[2]->store();
  a.set("nccl_id", bytes("\x01\x02\x00\x03"));
  EXPECT_EQ(b.get("nccl_id"), bytes("\x01\x02\x00\x03"));
  EXPECT_TRUE(b.check({"nccl_id"}));
  EXPECT_FALSE(b.check({"nccl_id", "absent"}));

  // get() blocks until another worker sets the key.
  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    w[0]->store().set("late", bytes("v"));
  });
  const auto t0 = Clock::now();
  EXPECT_EQ(a.get("late"), bytes("v"));
  EXPECT_GE(Clock::now() - t0, 250ms);
  later.get();

  // add() is atomic across workers and stores decimal text.
  std::vector<std::future<void>> adds;
  for (auto& s : w) {
    adds.push_back(std::async(std::launch::async, [&s] {
      for (int i = 0; i < 10; ++i) s->store().add("counter", 1);
    }));
  }
  for (auto& f : adds) f.get();
  EXPECT_EQ(a.add("counter", 0), 30);
  EXPECT_EQ(b.get("counter"), bytes("30"));

  // wait() on a key nobody sets ends in time, naming the key.
  const auto t1 = Clock::now();
  try {
    b.wait({"nccl_id", "never"}, 500ms);
    ADD_FAILURE() << "wait returned";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("'never'"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("'nccl_id'"), std::string::npos);
  }
  EXPECT_LT(Clock::now() - t1, 3s);

  const int64_t n = a.num_keys();
  EXPECT_EQ(n, 3);  // nccl_id, late, counter
  EXPECT_TRUE(a.remove("late"));
  EXPECT_FALSE(b.remove("late"));
  EXPECT_EQ(b.num_keys(), n - 1);
  EXPECT_EQ(a.timeout(), 3s);
  EXPECT_THROW(a.add("nccl_id", 1), DistributedError);  // not an integer

  for (int r = 2; r >= 0; --r) w[r]->finish(0);
  for (auto& s : w) EXPECT_FALSE(s->failure().has_value());
}

// A channel that failed to connect once must reconnect (by default gRPC
// holds re-resolution back for 30 s and fails every call meanwhile).
TEST(CoordinatorTest, WorkerStartingBeforeTheChiefStillJoins) {
  const int port = pick_free_port();
  const auto o = fast_options(5s);
  auto early = std::async(std::launch::async,
                          [&] { return std::make_unique<WorkerSession>(spec_for(1, 2, port), o); });
  std::this_thread::sleep_for(1500ms);
  const auto t0 = Clock::now();
  WorkerSession chief(spec_for(0, 2, port), o);
  auto w1 = early.get();
  EXPECT_LT(Clock::now() - t0, 2500ms);
  w1->finish(0);
  chief.finish(0);
}

TEST(CoordinatorTest, RendezvousTimeoutNamesMissingRank) {
  const int port = pick_free_port();
  const auto o = fast_options(2s);
  const auto t0 = Clock::now();
  auto chief = std::async(std::launch::async, [&] { WorkerSession s(spec_for(0, 3, port), o); });
  auto two = std::async(std::launch::async, [&] { WorkerSession s(spec_for(2, 3, port), o); });
  for (auto* f : {&chief, &two}) {
    try {
      f->get();
      ADD_FAILURE() << "rendezvous completed without rank 1";
    } catch (const DistributedError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("rendezvous timed out after 2 s"), std::string::npos) << m;
      EXPECT_NE(m.find("missing rank 1"), std::string::npos) << m;
    }
  }
  EXPECT_LT(Clock::now() - t0, 8s);
}

// With 100,000 workers, naming every missing rank would make one line of
// hundreds of KB: the timeout names the first 16 and counts the rest; each
// join reply carries at most those 16 too.
TEST(CoordinatorTest, RendezvousTimeoutOfAHugeJobNamesTheFirstMissingRanks) {
  const int port = pick_free_port();
  const int world = 100000;
  auto chief = std::async(std::launch::async,
                          [&] { WorkerSession s(spec_for(0, world, port), fast_options(2s)); });
  RawWorker last(port, world - 1, world);
  pb::JoinResponse resp;
  ASSERT_TRUE(wait_until([&] { return last.join(&resp).ok(); }, 10s));
  EXPECT_LE(resp.missing_size(), 16);
  EXPECT_EQ(resp.joined(), 2);
  try {
    chief.get();
    ADD_FAILURE() << "rendezvous completed";
  } catch (const DistributedError& e) {
    const std::string m = e.what();
    EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
    EXPECT_NE(m.find("2 of 100000 workers joined; missing ranks 1, 2, 3, 4, 5, 6, "
                     "7, 8, 9, 10, 11, 12, 13, 14, 15, 16 and 99982 more"),
              std::string::npos)
        << m.substr(0, 400);
  }
}

// Workers that disagree on a setting (sgd on one, adam on the other; two
// learning rates) would train apart or diverge: every worker
// of the job stops at rendezvous with ConfigError naming the keys and
// values, also those that agree with rank 0; workers that agree go on.
TEST(CoordinatorTest, WorkersWithDifferentSettingsAllStopNamingTheKeys) {
  const std::string same = "learning_rate=0.01\noptimizer=sgd\nbatch_size=8\n";
  const std::string other = "learning_rate=0.1\noptimizer=adam\nbatch_size=8\n";
  for (int odd : {1, 2, 0}) {
    const int port = pick_free_port();
    std::vector<std::future<void>> f;
    for (int r = 0; r < 3; ++r) {
      SessionOptions o = fast_options(10s);
      o.job_settings = r == odd ? other : same;
      f.push_back(std::async(std::launch::async, [=] {
        WorkerSession s(spec_for(r, 3, port), o);
        s.finish(0);
      }));
    }
    for (int r = 0; r < 3; ++r) {
      try {
        f[r].get();
        ADD_FAILURE() << "rank " << r << " went on beside rank " << odd;
      } catch (const ConfigError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("settings differ"), std::string::npos) << m;
        // With rank 0 odd, ranks 1 and 2 both differ: either is named.
        EXPECT_NE(
            m.find((odd == 0 ? "" : "rank " + std::to_string(odd)) + " differs from rank 0: "),
            std::string::npos)
            << m;
        const bool mine = odd != 0;
        EXPECT_NE(m.find(mine ? "learning_rate='0.1' (rank 0: '0.01')"
                              : "learning_rate='0.01' (rank 0: '0.1')"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("optimizer="), std::string::npos) << m;
        EXPECT_EQ(m.find("batch_size"), std::string::npos) << m;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": not a ConfigError: " << e.what();
      }
    }
  }
  // Equal settings: rendezvous completes.
  const int port = pick_free_port();
  SessionOptions o = fast_options(10s);
  o.job_settings = same;
  auto all = start_all(3, port, o);
  for (int r = 2; r >= 0; --r) all[r]->finish(0);  // the chief waits for the others
}

TEST(CoordinatorTest, UnreachableCoordinatorEndsRendezvousInTime) {
  const int port = pick_free_port();  // nobody listens
  const auto t0 = Clock::now();
  try {
    WorkerSession s(spec_for(1, 2, port), fast_options(1s));
    ADD_FAILURE() << "joined a coordinator that does not exist";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("unreachable"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, 5s);
}

TEST(CoordinatorTest, SilentWorkerIsLostAndEveryoneHearsIt) {
  const int port = pick_free_port();
  const auto o = fast_options(2s);
  auto f0 = std::async(std::launch::async,
                       [&] { return std::make_unique<WorkerSession>(spec_for(0, 3, port), o); });
  auto f1 = std::async(std::launch::async,
                       [&] { return std::make_unique<WorkerSession>(spec_for(1, 3, port), o); });
  RawWorker silent(port, 2, 3);
  silent.join_until_complete();
  auto w0 = f0.get();
  auto w1 = f1.get();
  silent.heartbeat(120);  // its last sign of life
  const auto t0 = Clock::now();
  const std::string expected = "worker 2 (fakehost:4242) lost at step 120: no heartbeat for 2 s";
  auto took =
      wait_until([&] { return w0->failure().has_value() && w1->failure().has_value(); }, 6s);
  ASSERT_TRUE(took.has_value()) << "nobody noticed the silent worker";
  EXPECT_EQ(*w0->failure(), expected);
  EXPECT_EQ(*w1->failure(), expected);
  // Within the timeout plus one monitor period and one heartbeat (and
  // slack for a loaded machine).
  EXPECT_LT(Clock::now() - t0, 4s);
  EXPECT_GE(Clock::now() - t0, 1500ms);
  // A store wait is cut short by the failure, with its message.
  try {
    w1->store().wait({"never"}, 10s);
    ADD_FAILURE();
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  w1->finish(kExitDistributed);
  w0->finish(kExitDistributed);
}

TEST(CoordinatorTest, WorkerExitingNonZeroFailsTheJob) {
  const int port = pick_free_port();
  auto w = start_all(2, port, fast_options());
  w[1]->report({7, 0.5, 100, 10});
  std::this_thread::sleep_for(300ms);
  w[1]->finish(kExitData);
  ASSERT_TRUE(wait_until([&] { return w[0]->failure().has_value(); }, 2s));
  EXPECT_NE(w[0]->failure()->find("worker 1 ("), std::string::npos);
  EXPECT_NE(w[0]->failure()->find("exited with code 3 at step 7"), std::string::npos)
      << *w[0]->failure();
  w[0]->finish(kExitDistributed);
}

TEST(CoordinatorTest, LostCoordinatorIsReported) {
  CoordinatorOptions co;
  co.world_size = 2;
  co.worker_timeout = 5s;
  co.token = kToken;
  auto server = std::make_unique<CoordinatorServer>(co);
  RawWorker chief(server->port(), 0, 2);
  auto f1 = std::async(std::launch::async, [&] {
    return std::make_unique<WorkerSession>(spec_for(1, 2, server->port()), fast_options(1s));
  });
  chief.join_until_complete();
  auto w1 = f1.get();
  server->shutdown();
  const auto t0 = Clock::now();
  ASSERT_TRUE(wait_until([&] { return w1->failure().has_value(); }, 4s));
  EXPECT_NE(
      w1->failure()->find("coordinator 127.0.0.1:" + std::to_string(server->port()) + " lost"),
      std::string::npos)
      << *w1->failure();
  EXPECT_GE(Clock::now() - t0, 800ms);
}

TEST(CoordinatorTest, GracefulStopReachesEveryWorkerAndStatusShowsIt) {
  const int port = pick_free_port();
  auto w = start_all(2, port, fast_options());
  w[0]->report({100, 2.5, 321.0, 60});
  w[1]->report({100, 2.4, 320.0, 61});
  std::this_thread::sleep_for(300ms);

  CoordinatorClient tool({"127.0.0.1:" + std::to_string(port), kToken, "", ""});
  pb::JobStatus status;
  auto ctx = tool.context(5s);
  ASSERT_TRUE(tool.stub().Status(ctx.get(), {}, &status).ok());
  EXPECT_EQ(status.state(), pb::RUNNING);
  ASSERT_EQ(status.workers_size(), 2);
  EXPECT_EQ(status.workers(1).state(), "running");
  EXPECT_EQ(status.workers(1).report().step(), 100);
  EXPECT_DOUBLE_EQ(status.workers(0).report().images_per_sec(), 321.0);
  EXPECT_LT(status.workers(0).last_heartbeat_secs(), 1.0);

  EXPECT_FALSE(w[0]->stop_requested());
  pb::StopResponse stop;
  auto ctx2 = tool.context(5s);
  ASSERT_TRUE(tool.stub().Stop(ctx2.get(), {}, &stop).ok());
  EXPECT_EQ(stop.state(), pb::STOPPING);
  EXPECT_TRUE(wait_until([&] { return w[0]->stop_requested() && w[1]->stop_requested(); }, 2s));
  for (auto& s : w) EXPECT_FALSE(s->failure().has_value());
  w[1]->finish(0);
  w[0]->finish(0);
}

TEST(CoordinatorTest, RequestStopFromAWorker) {
  const int port = pick_free_port();
  auto w = start_all(2, port, fast_options());
  w[1]->request_stop();
  EXPECT_TRUE(wait_until([&] { return w[0]->stop_requested() && w[1]->stop_requested(); }, 2s));
  // The chief leaving (here without finish(), i.e. exit code 1) waits until
  // the other worker has been told, so it never sees a "lost coordinator".
  w[0].reset();
  ASSERT_TRUE(wait_until([&] { return w[1]->failure().has_value(); }, 1s));
  EXPECT_NE(w[1]->failure()->find("worker 0 ("), std::string::npos) << *w[1]->failure();
  EXPECT_NE(w[1]->failure()->find("exited with code 1"), std::string::npos);
}

TEST(CoordinatorTest, CallsWithoutTheTokenAreRefused) {
  CoordinatorOptions co;
  co.world_size = 2;
  co.token = kToken;
  CoordinatorServer server(co);
  for (const std::string token : {"", "wrong"}) {
    CoordinatorClient c({"127.0.0.1:" + std::to_string(server.port()), token, "", ""});
    pb::JobStatus status;
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    grpc::Status s = c.stub().Status(&ctx, {}, &status);
    EXPECT_EQ(s.error_code(), grpc::UNAUTHENTICATED) << token;
    EXPECT_EQ(s.error_message().find(kToken), std::string::npos);
    EXPECT_NE(c.explain(s, "status").find("FASTNN_JOB_TOKEN"), std::string::npos);
  }
  // A worker with the wrong token fails at once, not at the deadline.
  SessionOptions o = fast_options(10s);
  o.token = "wrong";
  const auto t0 = Clock::now();
  try {
    WorkerSession s(spec_for(1, 2, server.port()), o);
    ADD_FAILURE();
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(kToken), std::string::npos);
  }
  EXPECT_LT(Clock::now() - t0, 3s);
  // And no token at all is a configuration error.
  o.token.clear();
  EXPECT_THROW(WorkerSession(spec_for(1, 2, server.port()), o), ConfigError);
}

// What a peer can make the server hold is bounded. A message
// over 4 MiB is refused before any handler runs; a long poll whose caller
// has gone frees its server thread within a poll slice (else 300 abandoned
// 10-minute waits would exhaust the 264 threads of a 1-worker job); the
// store refuses to grow past its bound; an ADD that overflows is refused.
TEST(CoordinatorTest, ServerLimitsBoundWhatAPeerCanMakeItHold) {
  CoordinatorOptions co;
  co.world_size = 1;
  co.token = kToken;
  CoordinatorServer server(co);
  CoordinatorClient c({"127.0.0.1:" + std::to_string(server.port()), kToken, "", ""});
  auto store = [&](pb::StoreRequest req, std::chrono::milliseconds deadline = 5s) {
    pb::StoreResponse resp;
    auto ctx = c.context(deadline);
    return c.stub().Store(ctx.get(), req, &resp);
  };
  pb::StoreRequest set;
  set.set_op(pb::StoreRequest::SET);
  set.add_keys("big");
  set.set_value(std::string(5 << 20, 'v'));
  EXPECT_EQ(store(set).error_code(), grpc::RESOURCE_EXHAUSTED);
  set.set_value(std::string(3 << 20, 'v'));
  EXPECT_TRUE(store(set).ok());

  pb::StoreRequest wait;
  wait.set_op(pb::StoreRequest::WAIT);
  wait.add_keys("never-set");
  wait.set_wait_ms(600000);
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(store(wait, 20ms).error_code(), grpc::DEADLINE_EXCEEDED) << i;
  }
  pb::JobStatus status;
  auto ctx = c.context(5s);
  EXPECT_TRUE(c.stub().Status(ctx.get(), {}, &status).ok());

  // A forged negative wait returns at once (and, in the sanitizer build,
  // without a signed overflow; the fuzz target's input for it:
  // fuzz/corpus/coordinator/regression_negative_wait_ms.bin).
  wait.set_wait_ms(INT64_MIN);
  EXPECT_TRUE(store(wait, 2s).ok());
  RawWorker joiner(server.port(), 0, 1);
  pb::JoinResponse joined;
  EXPECT_TRUE(joiner.join(&joined, INT64_MIN).ok());

  pb::StoreRequest add;
  add.set_op(pb::StoreRequest::ADD);
  add.add_keys("n");
  add.set_delta(INT64_MAX);
  EXPECT_TRUE(store(add).ok());
  const grpc::Status over = store(add);
  EXPECT_EQ(over.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(over.error_message().find("overflows"), std::string::npos) << over.error_message();
}

TEST(KvCoreTest, SetRefusesToGrowPastItsBound) {
  KvCore kv;
  EXPECT_TRUE(kv.set("a", bytes("12345"), 10));      // 6 bytes
  EXPECT_FALSE(kv.set("b", bytes("12345"), 10));     // would be 12
  EXPECT_TRUE(kv.set("a", bytes("123456789"), 10));  // replaces: 10
  EXPECT_TRUE(kv.set("a", bytes("1"), 10));          // shrinking always fits
  EXPECT_TRUE(kv.remove("a"));
  EXPECT_TRUE(kv.set("b", bytes("12345678"), 10));  // the removal freed it
  EXPECT_EQ(kv.add("c", 5), 5);
  EXPECT_FALSE(kv.set("d", bytes("x"), 10));  // b (9) + c (2) = 11
}

TEST(CoordinatorTest, HealthIsServingWithoutAToken) {
  CoordinatorOptions co;
  co.token = kToken;
  co.world_size = 2;
  auto server = std::make_unique<CoordinatorServer>(co);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()),
                                     grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  for (const std::string service : {"", "fastnn.dist.proto.Coordinator"}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok()) << service;
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse resp;
  EXPECT_EQ(health->Check(&ctx, req, &resp).error_code(), grpc::NOT_FOUND);
}

/// Runs a shell command; returns {exit code, stdout + stderr}.
std::pair<int, std::string> run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(CoordinatorTest, FastnnJobStatusStopHealth) {
  const int port = pick_free_port();
  auto w = start_all(2, port, fast_options());
  w[0]->report({120, 1.25, 456.5, 95});
  w[1]->report({120, 1.5, 455.0, 96});
  std::this_thread::sleep_for(300ms);
  const std::string tool = std::string(FASTNN_BIN_DIR) + "/fastnn_job";
  const std::string at = " --coordinator 127.0.0.1:" + std::to_string(port);
  const std::string token = std::string("FASTNN_JOB_TOKEN=") + kToken + " ";

  auto [code, out] = run(token + tool + " status" + at);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("job RUNNING: 2 workers"), std::string::npos) << out;
  EXPECT_NE(out.find("456.5"), std::string::npos) << out;
  EXPECT_NE(out.find("1m35s"), std::string::npos) << out;  // ETA
  EXPECT_EQ(out.find(kToken), std::string::npos);

  std::tie(code, out) = run("env -u FASTNN_JOB_TOKEN " + tool + " status" + at);
  EXPECT_EQ(code, 2) << out;
  std::tie(code, out) = run("FASTNN_JOB_TOKEN=bad " + tool + " status" + at);
  EXPECT_EQ(code, 5) << out;
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  std::tie(code, out) = run(token + tool + " status --timeout_secs 2" +
                            " --coordinator 127.0.0.1:" + std::to_string(pick_free_port()));
  EXPECT_EQ(code, 5) << out;
  std::tie(code, out) = run(tool + " status");
  EXPECT_EQ(code, 2) << out;  // --coordinator is required

  std::tie(code, out) = run("env -u FASTNN_JOB_TOKEN " + tool + " health" + at);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("SERVING"), std::string::npos) << out;

  std::tie(code, out) = run(token + tool + " stop --reason preempt" + at);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(wait_until([&] { return w[0]->stop_requested() && w[1]->stop_requested(); }, 2s));
  std::tie(code, out) = run(token + tool + " status" + at);
  EXPECT_NE(out.find("job STOPPING"), std::string::npos) << out;
  EXPECT_NE(out.find("stop requested (preempt)"), std::string::npos) << out;
  w[1]->finish(0);
  w[0]->finish(0);
}

TEST(CoordinatorTest, TlsWhenCertificateFilesAreGiven) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(FASTNN_TEST_TMP) / ("tls_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string();
  const std::string key = (dir / "key.pem").string();
  auto [code, out] =
      run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
          "-nodes -days 1 -subj /CN=localhost -addext "
          "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
          key + " -out " + cert);
  if (code != 0) GTEST_SKIP() << "openssl cannot make a certificate: " << out;
  SessionOptions o = fast_options();
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  o.tls_ca_file = cert;  // self-signed: its own CA
  const int port = pick_free_port();
  auto w = start_all(2, port, o);
  w[1]->store().set("k", bytes("over tls"));
  EXPECT_EQ(w[0]->store().get("k"), bytes("over tls"));

  // A plaintext client gets nowhere.
  CoordinatorClient plain({"127.0.0.1:" + std::to_string(port), kToken, "", ""});
  pb::JobStatus status;
  auto ctx = plain.context(2s, /*wait_for_ready=*/false);
  EXPECT_FALSE(plain.stub().Status(ctx.get(), {}, &status).ok());
  // fastnn_job with the CA does.
  std::tie(code, out) = run(std::string("FASTNN_JOB_TOKEN=") + kToken + " " + FASTNN_BIN_DIR +
                            "/fastnn_job status --tls_ca_file " + cert +
                            " --coordinator 127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("job RUNNING"), std::string::npos) << out;
  // A client trusting another CA refuses the server: a certificate made
  // the same way but by another key.
  const std::string other_cert = (dir / "other.pem").string();
  std::tie(code, out) =
      run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
          "-nodes -days 1 -subj /CN=localhost -addext "
          "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
          (dir / "other_key.pem").string() + " -out " + other_cert);
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = run(std::string("FASTNN_JOB_TOKEN=") + kToken + " " + FASTNN_BIN_DIR +
                            "/fastnn_job status --tls_ca_file " + other_cert +
                            " --coordinator 127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(code, 5) << out;
  EXPECT_EQ(out.find("job RUNNING"), std::string::npos) << out;
  w[1]->finish(0);
  w[0]->finish(0);
  fs::remove_all(dir);
}

/// The local addresses listening on TCP `port`, in /proc/net/tcp{,6}'s hex:
/// "0100007F" is 127.0.0.1; all zeros is every interface.
std::vector<std::string> listeners(int port) {
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, ":%04X", port);
  std::vector<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line, slot, local, remote, state;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, suffix) == 0) {
        out.push_back(local.substr(0, local.size() - 5));
      }
    }
  }
  return out;
}

// 127.0.0.1 as /proc/net/tcp writes it, or as /proc/net/tcp6 writes the
// IPv4-mapped ::ffff:127.0.0.1 of a dual-stack socket (gRPC's choice).
bool only_loopback(const std::vector<std::string>& listeners) {
  if (listeners.empty()) return false;
  for (const auto& a : listeners) {
    if (a != "0100007F" && a != "0000000000000000FFFF00000100007F") return false;
  }
  return true;
}

TEST(CoordinatorTest, ListenHostIsLoopbackOnlyForALoopbackCoordinator) {
  EXPECT_EQ(listen_host_for("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(listen_host_for("127.0.1.1"), "127.0.1.1");
  EXPECT_EQ(listen_host_for("localhost"), "localhost");
  EXPECT_EQ(listen_host_for("::1"), "::1");
  EXPECT_EQ(listen_host_for("10.0.0.7"), "0.0.0.0");
  EXPECT_EQ(listen_host_for("node-1.cluster"), "0.0.0.0");
  EXPECT_EQ(listen_host_for("::"), "0.0.0.0");
  EXPECT_EQ(listen_host_for("0.0.0.0"), "0.0.0.0");

  CoordinatorOptions o;
  o.token = kToken;
  {
    o.host = "127.0.0.1";
    CoordinatorServer loopback(o);
    EXPECT_EQ(loopback.address(), "127.0.0.1:" + std::to_string(loopback.port()));
    EXPECT_EQ(loopback.local_address(), loopback.address());
    EXPECT_TRUE(only_loopback(listeners(loopback.port())))
        << testing::PrintToString(listeners(loopback.port()));
  }
  o.host = CoordinatorOptions().host;  // the default: every interface
  CoordinatorServer everywhere(o);
  EXPECT_EQ(everywhere.address(), "0.0.0.0:" + std::to_string(everywhere.port()));
  EXPECT_EQ(everywhere.local_address(), "127.0.0.1:" + std::to_string(everywhere.port()));
  const auto all = listeners(everywhere.port());
  EXPECT_FALSE(all.empty());
  for (const auto& a : all) EXPECT_EQ(a.find_first_not_of('0'), std::string::npos) << a;
}

// The chief of a one-machine job (coordinator 127.0.0.1:PORT, as the
// nproc_per_node launcher hands it out) listens on loopback only, not on
// 0.0.0.0, which would open it to the whole network.
TEST(CoordinatorTest, OneMachineJobListensOnLoopbackOnly) {
  const int port = pick_free_port();
  auto w = start_all(2, port, fast_options());
  EXPECT_TRUE(only_loopback(listeners(port))) << testing::PrintToString(listeners(port));
  w[1]->finish(0);
  w[0]->finish(0);
}

TEST(CoordinatorTest, OneProcessJobNeedsNoServer) {
  ClusterSpec one;
  WorkerSession s(one, SessionOptions());
  s.store().set("k", bytes("v"));
  EXPECT_EQ(s.store().get("k"), bytes("v"));
  EXPECT_EQ(s.store().add("n", 5), 5);
  EXPECT_THROW(s.store().wait({"never"}, 50ms), DistributedError);
  s.request_stop();
  EXPECT_TRUE(s.stop_requested());
  s.finish(0);
}

}  // namespace
}  // namespace fastnn::dist
