// Schedules against hand-computed values (reference/fastnn.md §4).
#include <gtest/gtest.h>

#include <cmath>

#include "fastnn/hparams.h"
#include "src/optim/learning_rate.h"

namespace fastnn::optim {
namespace {

TEST(LearningRate, FixedIgnoresWarmupAndDecay) {
  ScheduleOptions o;
  o.type = "fixed";
  o.learning_rate = 0.3;
  o.warmup_steps = 100;
  o.decay_steps = 1;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.3);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 1000), 0.3);
}

TEST(LearningRate, FastNNDefaultsAreConstant) {
  HParams hp;  // exponential, decay_scheme '' -> no decay during training
  auto o = schedule_from_hparams(hp, 60000, 1);
  EXPECT_EQ(o.decay_steps, 0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.01);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 99), 0.01);
}

TEST(LearningRate, Luong234CountsFromStopAtStep) {
  HParams hp;
  hp.stop_at_step = 1200;
  hp.decay_scheme = "luong234";
  hp.learning_rate = 1.0;
  auto o = schedule_from_hparams(hp, 0, 1);
  EXPECT_EQ(o.decay_start, 800);   // int(1200*2/3)
  EXPECT_EQ(o.decay_steps, 100);   // int((1200-800)/4)
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 799), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 800), 1.0);  // 0.94^0
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 900), 0.94);
  EXPECT_NEAR(learning_rate_at(o, 1150), 0.94 * 0.94 * 0.94, 1e-15);
}

TEST(LearningRate, Luong5And10) {
  HParams hp;
  hp.stop_at_step = 1000;
  hp.decay_scheme = "luong5";
  auto o = schedule_from_hparams(hp, 0, 1);
  EXPECT_EQ(o.decay_start, 500);
  EXPECT_EQ(o.decay_steps, 100);
  hp.decay_scheme = "luong10";
  o = schedule_from_hparams(hp, 0, 1);
  EXPECT_EQ(o.decay_steps, 50);
}

TEST(LearningRate, T2TWarmupStartsAtOnePercent) {
  ScheduleOptions o;
  o.type = "exponential";
  o.learning_rate = 2.0;
  o.warmup_steps = 10;
  EXPECT_NEAR(learning_rate_at(o, 0), 0.02, 1e-15);
  // s = 5: 2 * 0.01^(5/10) = 2 * 0.1
  EXPECT_NEAR(learning_rate_at(o, 5), 0.2, 1e-14);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 10), 2.0);
}

TEST(LearningRate, SlimExponentialFromEpochsPerDecay) {
  HParams hp;
  hp.learning_rate = 0.1;
  hp.batch_size = 100;
  hp.num_epochs_per_decay = 2.0;
  auto o = schedule_from_hparams(hp, 1000, 1);
  EXPECT_EQ(o.decay_start, 0);
  EXPECT_EQ(o.decay_steps, 20);  // int(1000 * 2 / 100)
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 19), 0.1);
  EXPECT_NEAR(learning_rate_at(o, 20), 0.094, 1e-15);
  EXPECT_NEAR(learning_rate_at(o, 45), 0.1 * 0.94 * 0.94, 1e-15);
  // Workers divide the steps per epoch.
  EXPECT_EQ(schedule_from_hparams(hp, 1000, 2).decay_steps, 10);
}

TEST(LearningRate, Polynomial) {
  ScheduleOptions o;
  o.type = "polynomial";
  o.learning_rate = 1.0;
  o.end_learning_rate = 0.1;
  o.decay_start = 0;
  o.decay_steps = 10;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 1.0);
  EXPECT_NEAR(learning_rate_at(o, 5), 0.55, 1e-15);  // 0.9*0.5 + 0.1
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 50), 0.1);
}

TEST(LearningRate, Cosine) {
  ScheduleOptions o;
  o.type = "cosine";
  o.learning_rate = 1.0;
  o.total_steps = 100;
  o.alpha = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 1.0);
  EXPECT_NEAR(learning_rate_at(o, 50), 0.9 * 0.5 + 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(o, 100), 0.1, 1e-12);
}

}  // namespace
}  // namespace fastnn::optim
