// The coordinator's handlers (src/dist/coordinator_service.h) called from
// many threads at once, transport aside: what the gRPC server's threads do
// during a job, without gRPC in between. Under ThreadSanitizer
// (scripts/sanitize.sh tsan) this is where a race in the handlers' own state
// would be reported: gRPC comes from Debian uninstrumented, and its
// suppressions (scripts/sanitizers/tsan.supp) also cover the handlers when
// they are reached through it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "src/dist/coordinator_service.h"

namespace fastnn::dist {
namespace {

namespace pb = proto;
using detail::Service;

constexpr int kWorld = 4;
constexpr int kSteps = 60;

pb::StoreRequest store_op(pb::StoreRequest::Op op, const std::string& key) {
  pb::StoreRequest r;
  r.set_op(op);
  r.add_keys(key);
  return r;
}

std::string key_of(int rank, int step) {
  return "r" + std::to_string(rank) + "/" + std::to_string(step);
}

TEST(CoordinatorServiceRaces, EveryHandlerFromManyThreadsAtOnce) {
  CoordinatorOptions o;
  o.world_size = kWorld;
  o.token = "t";
  o.worker_timeout = std::chrono::milliseconds(60000);
  Service s(o);
  const Service::Cancelled never = [] { return false; };
  std::thread monitor([&] { s.monitor(); });

  std::atomic<int> failures{0};
  auto check = [&](const grpc::Status& st, const char* what) {
    if (!st.ok()) {
      ++failures;
      ADD_FAILURE() << what << ": " << st.error_message();
    }
  };
  std::atomic<bool> done{false};
  // Observers: status() and the store's read-only calls, all the time.
  std::vector<std::thread> observers;
  std::atomic<int64_t> status_calls{0};
  for (int i = 0; i < 2; ++i) {
    observers.emplace_back([&] {
      while (!done.load()) {
        pb::StatusRequest req;
        pb::JobStatus st;
        check(s.status(&req, &st, never), "status");
        pb::StoreRequest n;
        n.set_op(pb::StoreRequest::NUM_KEYS);
        pb::StoreResponse resp;
        check(s.store(&n, &resp, never), "num_keys");
        ++status_calls;
      }
    });
  }

  std::vector<std::thread> workers;
  for (int rank = 0; rank < kWorld; ++rank) {
    workers.emplace_back([&, rank] {
      pb::JoinRequest j;
      j.set_rank(rank);
      j.set_world_size(kWorld);
      j.set_host("localhost");
      j.set_pid(1000 + rank);
      j.set_wait_ms(30000);
      pb::JoinResponse jr;
      check(s.join(&j, &jr, never), "join");
      EXPECT_TRUE(jr.complete());
      for (int step = 1; step <= kSteps; ++step) {
        pb::HeartbeatRequest h;
        h.set_rank(rank);
        h.mutable_report()->set_step(step);
        pb::HeartbeatResponse hr;
        check(s.heartbeat(&h, &hr, never), "heartbeat");
        EXPECT_EQ(hr.state(), pb::RUNNING);

        auto set = store_op(pb::StoreRequest::SET, key_of(rank, step));
        set.set_value(std::to_string(rank * 1000 + step));
        pb::StoreResponse r1;
        check(s.store(&set, &r1, never), "set");
        auto add = store_op(pb::StoreRequest::ADD, "counter");
        add.set_delta(1);
        pb::StoreResponse r2;
        check(s.store(&add, &r2, never), "add");
        // Wait for the next rank's value of this step, then read it.
        const int peer = (rank + 1) % kWorld;
        auto wait = store_op(pb::StoreRequest::WAIT, key_of(peer, step));
        wait.set_wait_ms(30000);
        pb::StoreResponse r3;
        check(s.store(&wait, &r3, never), "wait");
        EXPECT_TRUE(r3.ok());
        auto get = store_op(pb::StoreRequest::GET, key_of(peer, step));
        pb::StoreResponse r4;
        check(s.store(&get, &r4, never), "get");
        EXPECT_EQ(r4.value(), std::to_string(peer * 1000 + step));
        if (step > 3) {
          // Its own key of three steps back: having read the next rank's
          // value of this step, which that rank set only after reading its
          // next rank's value of the step before, and so round the ring,
          // the rank reading this one's keys is past step - 3.
          auto rm = store_op(pb::StoreRequest::REMOVE, key_of(rank, step - 3));
          pb::StoreResponse r5;
          check(s.store(&rm, &r5, never), "remove");
        }
      }
      pb::FinishRequest f;
      f.set_rank(rank);
      f.set_step(kSteps);
      pb::FinishResponse fr;
      check(s.finish(&f, &fr, never), "finish");
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  for (auto& t : observers) t.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(status_calls.load(), 0);
  pb::StoreRequest get = store_op(pb::StoreRequest::ADD, "counter");
  get.set_delta(0);
  pb::StoreResponse counter;
  ASSERT_TRUE(s.store(&get, &counter, never).ok());
  EXPECT_EQ(counter.number(), int64_t{kWorld} * kSteps);
  pb::StatusRequest req;
  pb::JobStatus st;
  ASSERT_TRUE(s.status(&req, &st, never).ok());
  EXPECT_EQ(st.state(), pb::FINISHED);
  ASSERT_EQ(st.workers_size(), kWorld);
  for (const auto& w : st.workers()) EXPECT_EQ(w.report().step(), kSteps);

  s.begin_shutdown();
  monitor.join();
}

}  // namespace
}  // namespace fastnn::dist
