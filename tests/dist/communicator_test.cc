#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "fastnn/errors.h"
#include "src/compat/torch_compat.h"
#include "src/dist/gradient_reducer.h"
#include "src/dist/process_group.h"
#include "src/dist/store_adapter.h"
#include "tests/dist/memory_store.h"

namespace fastnn::dist {
namespace {

using testing::MemoryStore;

// Runs fn(comm) for every rank on its own thread, all through one store
// (the adapter: the path the coordinator's store takes). Rethrows the
// first failure.
void run_ranks(int world, const std::function<void(Collective&)>& fn,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  MemoryStore store;
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        CommunicatorOptions o;
        o.rank = r;
        o.world_size = world;
        o.timeout = timeout;
        auto comm = connect_gloo(c10::make_intrusive<StoreAdapter>(store), o);
        fn(*comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

TEST(CommunicatorTest, BroadcastFromRankZeroOverEveryDtype) {
  run_ranks(3, [](Collective& c) {
    auto f = torch::full({2, 3}, static_cast<float>(c.rank() + 1));
    auto d = torch::full({4}, static_cast<double>(10 * (c.rank() + 1)), torch::kFloat64);
    auto i = torch::full({1}, static_cast<int64_t>(100 + c.rank()), torch::kInt64);
    c.broadcast({f, d, i}, "test state");
    EXPECT_TRUE(f.eq(1).all().item<bool>());
    EXPECT_TRUE(d.eq(10).all().item<bool>());
    EXPECT_EQ(i.item<int64_t>(), 100);
  });
}

// Workers whose models differ (a num_classes from a per-rank dataset)
// broadcast states of different sizes, on which Gloo's transport thread
// would fail an enforce and abort the process (exit 134): every rank
// learns of the mismatch first and throws DistributedError (exit 5) with
// both sizes. The same for equal totals in different shapes, and for a
// different dtype mix.
TEST(CommunicatorTest, BroadcastOfDifferentSizesIsADistributedErrorOnEveryRank) {
  const std::vector<std::function<std::vector<torch::Tensor>(int)>> states = {
      [](int r) { return std::vector<torch::Tensor>{torch::zeros({r == 0 ? 10 : 5})}; },
      [](int r) {
        return std::vector<torch::Tensor>{
            torch::zeros(r == 0 ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3, 2})};
      },
      [](int r) {
        return std::vector<torch::Tensor>{
            torch::zeros({4}), torch::zeros({4}, r == 0 ? torch::kFloat32 : torch::kFloat64)};
      }};
  for (const auto& state : states) {
    std::vector<std::string> messages(2);
    run_ranks(2, [&](Collective& c) {
      try {
        c.broadcast(state(c.rank()), "rank 0's model");
        ADD_FAILURE() << "rank " << c.rank() << ": no error";
      } catch (const DistributedError& e) {
        messages[c.rank()] = e.what();
      }
    });
    for (const std::string& m : messages) {
      EXPECT_NE(m.find("broadcast of rank 0's model failed"), std::string::npos) << m;
      EXPECT_NE(m.find("differ across the workers"), std::string::npos) << m;
    }
  }
  // A matching broadcast afterwards still works.
  run_ranks(2, [](Collective& c) {
    auto t = torch::full({3}, static_cast<float>(c.rank() + 1));
    c.broadcast({t}, "state");
    EXPECT_TRUE(t.eq(1).all().item<bool>());
  });
}

}  // namespace
}  // namespace fastnn::dist

namespace gloo {
// Named like Gloo's own exceptions (gloo::EnforceNotMet, gloo::IoException).
struct TestFailure : std::exception {
  const char* what() const noexcept override { return "enforce fail at pair.cc:510"; }
};
}  // namespace gloo

namespace fastnn::dist {
namespace {

// What Gloo throws on its transport threads cannot be caught there; the
// process exits 5 with the message instead of aborting (134).
TEST(CommunicatorDeathTest, GlooExceptionOnItsOwnThreadExitsFive) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        run_ranks(1, [](Collective&) {});
        std::thread([] { throw gloo::TestFailure(); }).join();
      },
      ::testing::ExitedWithCode(kExitDistributed),
      "distributed failure: Gloo failed on one of its threads: enforce fail at pair.cc:510");
}

// A GLOO_SOCKET_IFNAME naming no interface is a configuration error (exit
// 2) naming the variable, not an internal error (exit 1).
TEST(CommunicatorTest, UnknownGlooSocketInterfaceIsAConfigError) {
  setenv("GLOO_SOCKET_IFNAME", "bogus0", 1);
  try {
    run_ranks(1, [](Collective&) {});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GLOO_SOCKET_IFNAME='bogus0'"), std::string::npos)
        << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ConfigError: " << e.what();
  }
  unsetenv("GLOO_SOCKET_IFNAME");
}

TEST(CommunicatorTest, AllReduceSums) {
  run_ranks(2, [](Collective& c) {
    auto v = torch::tensor({1.0, 2.0}, torch::kFloat64) * (c.rank() + 1);
    c.all_reduce_sum({v}, "metrics");
    EXPECT_DOUBLE_EQ(v[0].item<double>(), 3.0);
    EXPECT_DOUBLE_EQ(v[1].item<double>(), 6.0);
  });
}

TEST(CommunicatorTest, MissingPeerIsADistributedErrorNamingTheStep) {
  // Rank 1 joins the group but never joins the all-reduce.
  std::string message;
  try {
    run_ranks(
        2,
        [](Collective& c) {
          c.set_step(17);
          if (c.rank() == 0) {
            auto v = torch::ones({4});
            c.all_reduce_sum({v}, "metrics");
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          }
        },
        std::chrono::milliseconds(1000));
  } catch (const DistributedError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("all-reduce of metrics"), std::string::npos) << message;
  EXPECT_NE(message.find("global step 17"), std::string::npos) << message;
}

TEST(CommunicatorTest, RendezvousTimeoutIsADistributedError) {
  MemoryStore store(std::chrono::milliseconds(500));
  CommunicatorOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.timeout = std::chrono::milliseconds(500);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(connect_gloo(c10::make_intrusive<StoreAdapter>(store), o), DistributedError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(CommunicatorTest, LocalAddressTowardLoopbackIsLoopback) {
  EXPECT_EQ(local_address_toward("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(local_address_toward("no-such-host.invalid"), "");
}

std::vector<torch::Tensor> make_params(int64_t scale) {
  // Sizes in floats: 100, 10, 300, 50, 5 (registration order).
  std::vector<torch::Tensor> ps;
  for (int64_t n : {100, 10, 300, 50, 5}) {
    ps.push_back(torch::full({n}, static_cast<float>(scale)).requires_grad_());
  }
  return ps;
}

TEST(GradientReducerTest, BucketsFollowReverseOrderAndTheByteCap) {
  run_ranks(1, [](Collective& c) {
    auto ps = make_params(1);
    // 220 floats = 880 bytes: 5+50 fit, 300 alone, 10+100 fit.
    GradientReducer r(c, ps, 880);
    std::vector<std::vector<size_t>> want{{4, 3}, {2}, {1, 0}};
    EXPECT_EQ(r.buckets(), want);
    GradientReducer big(c, ps, 1 << 20);
    EXPECT_EQ(big.buckets().size(), 1u);
    GradientReducer tiny(c, ps, 1);
    EXPECT_EQ(tiny.buckets().size(), ps.size());
  });
}

TEST(GradientReducerTest, AveragesGradientsAndStartsBucketsDuringBackward) {
  run_ranks(2, [](Collective& c) {
    auto ps = make_params(1);
    GradientReducer r(c, ps, 880);
    for (int step = 0; step < 3; ++step) {
      for (auto& p : ps) p.mutable_grad() = torch::Tensor();
      r.prepare();
      // Every parameter gets gradient (rank + 1) * (k + 1) * (step + 1);
      // parameter 1 is left out on rank 1 (an unused parameter: zero).
      torch::Tensor loss = torch::zeros({});
      for (size_t k = 0; k < ps.size(); ++k) {
        if (c.rank() == 1 && k == 1) continue;
        loss = loss + ps[k].sum() * static_cast<double>((c.rank() + 1) * (k + 1) * (step + 1));
      }
      loss.backward();
      r.finish();
      EXPECT_GE(r.launched_during_backward(), 1);
      for (size_t k = 0; k < ps.size(); ++k) {
        const double r0 = 1.0 * (k + 1) * (step + 1);
        const double r1 = (k == 1) ? 0.0 : 2.0 * (k + 1) * (step + 1);
        EXPECT_TRUE(ps[k].grad().eq((r0 + r1) / 2).all().item<bool>()) << k;
      }
    }
  });
}

// data_format=NHWC: convolution weights are channels-last; each .grad keeps
// its parameter's strides and is the bucket's own memory (no transposed
// copy), with the averaged values.
TEST(GradientReducerTest, ChannelsLastGradientsKeepTheirParametersStrides) {
  run_ranks(2, [](Collective& c) {
    torch::manual_seed(3);
    std::vector<torch::Tensor> ps{
        torch::randn({8, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_(),
        torch::randn({8}).requires_grad_(),
        torch::randn({4, 8, 1, 1}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_()};
    ASSERT_NE(ps[0].strides(), ps[0].contiguous().strides());
    GradientReducer r(c, ps, 1 << 20);
    for (int step = 0; step < 2; ++step) {
      for (auto& p : ps) p.mutable_grad() = torch::Tensor();
      r.prepare();
      torch::Tensor loss = torch::zeros({});
      // A weight per element, so a transposed layout would put values in
      // the wrong places.
      for (auto& p : ps) {
        loss = loss + (p * torch::arange(p.numel(), torch::kFloat).view(p.sizes()) *
                       static_cast<double>(c.rank() + 1))
                          .sum();
      }
      loss.backward();
      r.finish();
      for (size_t k = 0; k < ps.size(); ++k) {
        const auto& g = ps[k].grad();
        EXPECT_EQ(g.strides(), ps[k].strides()) << k;
        const auto want = torch::arange(ps[k].numel(), torch::kFloat).view(ps[k].sizes()) * 1.5;
        EXPECT_TRUE(torch::equal(g, want)) << k;
      }
    }
    // Every .grad lies inside the one bucket.
    const auto* base = static_cast<const char*>(ps[0].grad().data_ptr());
    for (auto& p : ps) {
      const auto* at = static_cast<const char*>(p.grad().data_ptr());
      EXPECT_LT(std::abs(at - base), 1 << 20);
    }
  });
}

// A build without c10d's NCCL, or a machine without the CUDA device asked
// for, refuses an NCCL group with exit 2's error and a message, before any
// rendezvous (nothing waits for peers).
TEST(NcclGroupTest, RefusedCleanlyWithoutNcclOrDevice) {
  if (nccl_built() && torch::cuda::device_count() > 0) {
    GTEST_SKIP() << "a CUDA device is here: gpu_test runs the NCCL group";
  }
  MemoryStore store(std::chrono::milliseconds(500));
  CommunicatorOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.cuda_device = 0;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    connect_nccl(c10::make_intrusive<StoreAdapter>(store), o);
    ADD_FAILURE() << "connect_nccl returned";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(nccl_built() ? "CUDA device" : "needs NCCL"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

// What connect_nccl sets before c10d reads it: errors and timeouts end
// the job through our own exit 5, never c10d's SIGABRT.
TEST(NcclGroupTest, EnvironmentKeepsTheExitCodeOurs) {
  auto env = nccl_environment();
  // The names this LibTorch reads (NCCL_* before 2.2).
  const std::string prefix = FASTNN_TORCH_AT_LEAST(2, 2) ? "TORCH_NCCL_" : "NCCL_";
  EXPECT_EQ(env.at(prefix + "ASYNC_ERROR_HANDLING"), "2");  // CleanUpOnly
  EXPECT_EQ(env.at(prefix + "BLOCKING_WAIT"), "0");         // stream-level waits
  EXPECT_EQ(env.at("TORCH_NCCL_ENABLE_MONITORING"), "0");   // would SIGABRT
  EXPECT_EQ(env.at("TORCH_NCCL_DUMP_ON_TIMEOUT"), "0");
}

}  // namespace
}  // namespace fastnn::dist
