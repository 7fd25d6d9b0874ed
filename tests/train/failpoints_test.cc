// FASTNN_FAILPOINTS' syntax: what arms a failpoint, and that a typo is an
// error rather than a fault test that injects nothing.
#include "src/train/failpoints.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace fastnn::train::failpoints {
namespace {

TEST(Failpoints, ParsesNamesAndValues) {
  const auto armed = parse("read_on_demand;inf_grad_steps=5,7;;oom_at_step=14");
  ASSERT_EQ(armed.size(), 3u);
  EXPECT_EQ(armed.at("read_on_demand"), "");
  EXPECT_EQ(armed.at("inf_grad_steps"), "5,7");
  EXPECT_EQ(parse_steps("inf_grad_steps", armed.at("inf_grad_steps")),
            (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(parse_steps("oom_at_step", armed.at("oom_at_step")), (std::vector<int64_t>{14}));
  EXPECT_TRUE(parse("").empty());
}

TEST(Failpoints, RefusesUnknownNamesAndBadSteps) {
  EXPECT_THROW(parse("inf_grad_step=5"), std::invalid_argument);
  EXPECT_THROW(parse_steps("oom_at_step", ""), std::invalid_argument);
  EXPECT_THROW(parse_steps("oom_at_step", "14x"), std::invalid_argument);
  EXPECT_THROW(parse_steps("oom_at_step", "-1"), std::invalid_argument);
  EXPECT_THROW(parse_steps("inf_grad_steps", "3,,4"), std::invalid_argument);
}

TEST(Failpoints, InertWhenNothingIsArmed) {
  // The test binary runs without FASTNN_FAILPOINTS (CTest sets none).
  if (std::getenv("FASTNN_FAILPOINTS") != nullptr) GTEST_SKIP() << "FASTNN_FAILPOINTS is set";
  EXPECT_FALSE(read_on_demand());
  EXPECT_FALSE(out_of_memory_step().has_value());
  EXPECT_FALSE(static_cast<bool>(gradient_fault()));
}

}  // namespace
}  // namespace fastnn::train::failpoints
