// FASTNN_PROFILE_STEPS (src/train/step_profile.h): the span it reads, and
// the table of a profiled span of CPU steps.
#include "src/train/step_profile.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "tests/error_of.h"

namespace fastnn::train {
namespace {

class Env {
 public:
  Env(const char* steps, const char* top = nullptr) {
    set("FASTNN_PROFILE_STEPS", steps);
    set("FASTNN_PROFILE_TOP", top);
    ::unsetenv("FASTNN_PROFILE_TRACE");
  }
  ~Env() {
    ::unsetenv("FASTNN_PROFILE_STEPS");
    ::unsetenv("FASTNN_PROFILE_TOP");
  }

 private:
  static void set(const char* name, const char* value) {
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
};

std::string env_error(const char* steps, const char* top = nullptr) {
  Env env(steps, top);
  return ::fastnn::testing::error_of<ConfigError>([] { profile_span_from_env(); });
}

TEST(StepProfile, TheSpanIsReadFromTheEnvironment) {
  {
    Env env(nullptr);
    EXPECT_FALSE(profile_span_from_env().has_value());
  }
  Env env("21:25", "7");
  const auto span = profile_span_from_env();
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(span->first, 21);
  EXPECT_EQ(span->last, 25);
  EXPECT_EQ(span->top, 7);
  EXPECT_TRUE(span->trace_path.empty());
}

TEST(StepProfile, AMalformedSpanIsAConfigErrorNamingTheVariable) {
  for (const char* bad : {"25", "5:3", "0:2", "a:b", "3:", ":4", "2:3x"}) {
    const std::string error = env_error(bad);
    EXPECT_NE(error.find("FASTNN_PROFILE_STEPS=" + std::string(bad)), std::string::npos) << error;
    EXPECT_NE(error.find("FIRST:LAST"), std::string::npos) << error;
  }
  EXPECT_NE(env_error("1:2", "0").find("FASTNN_PROFILE_TOP=0"), std::string::npos);
}

// The loop's side of TrainControl: a step counter.
class Steps : public TrainControl {
 public:
  const HParams& hparams() const override { return hp_; }
  int rank() const override { return 0; }
  bool writes_train_dir() const override { return false; }
  double now() const override { return 0; }
  int64_t global_step() const override { return step; }
  int64_t final_step() const override { return -1; }
  std::string save_checkpoint() override { return ""; }
  void request_stop(const std::string&) override {}
  int64_t step = 0;

 private:
  HParams hp_;
};

// Steps 1..5, each three matrix products and one addition; steps 2..4
// profiled: the table counts the span's operators and only them.
TEST(StepProfile, TheTableCountsTheOperatorsOfTheProfiledStepsOnly) {
  ProfileSpan span;
  span.first = 2;
  span.last = 4;
  span.top = 50;
  ProfileTable table;
  int tables = 0;
  auto hook = make_profile_hook(span, torch::Device(torch::kCPU), [&](const ProfileTable& t) {
    table = t;
    ++tables;
  });
  Steps control;
  const auto a = torch::randn({64, 64});
  EXPECT_FALSE(hook->needs_metrics(control, 3));
  for (int i = 0; i < 5; ++i) {
    hook->before_step(control);
    auto x = torch::mm(torch::mm(torch::mm(a, a), a), a);
    x = torch::add(x, a);
    control.step += 1;
    hook->after_step(control, StepStats{});
  }
  hook->after_run(control, RunSummary{});
  ASSERT_EQ(tables, 1);
  EXPECT_EQ(table.steps, 3);
  EXPECT_GT(table.wall_ms, 0);
  EXPECT_EQ(table.device_kind, "CPU operators (inclusive)");
  const ProfileRow* mm = nullptr;
  const ProfileRow* add = nullptr;
  for (const auto& r : table.rows) {
    if (r.name == "aten::mm") mm = &r;
    if (r.name == "aten::add") add = &r;
  }
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(mm->calls, 9);
  EXPECT_EQ(add->calls, 3);
  EXPECT_GE(mm->total_ms, 0);
  const std::string text = format_profile(table);
  EXPECT_NE(text.find("3 step(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mm"), std::string::npos) << text;
}

// A run that ends inside the span reports the steps it made.
TEST(StepProfile, ARunEndingInsideTheSpanReportsItsSteps) {
  ProfileSpan span;
  span.first = 1;
  span.last = 100;
  int64_t steps = -1;
  auto hook = make_profile_hook(span, torch::Device(torch::kCPU),
                                [&](const ProfileTable& t) { steps = t.steps; });
  Steps control;
  for (int i = 0; i < 2; ++i) {
    hook->before_step(control);
    (void)torch::relu(torch::randn({8}));
    control.step += 1;
    hook->after_step(control, StepStats{});
  }
  EXPECT_EQ(steps, -1);
  hook->after_run(control, RunSummary{});
  EXPECT_EQ(steps, 2);
}

}  // namespace
}  // namespace fastnn::train
