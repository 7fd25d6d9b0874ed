// Schedules against hand-computed values (TF1's *_decay functions).
#include "src/optim/learning_rate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fastnn/errors.h"
#include "fastnn/hparams.h"
#include "src/train/builder.h"

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
  auto o = train::schedule_options(hp, 60000, 1);
  EXPECT_EQ(o.decay_steps, 0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.01);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 99), 0.01);
}

TEST(LearningRate, Luong234CountsFromStopAtStep) {
  HParams hp;
  hp.stop_at_step = 1200;
  hp.decay_scheme = "luong234";
  hp.learning_rate = 1.0;
  auto o = train::schedule_options(hp, 0, 1);
  EXPECT_EQ(o.decay_start, 800);  // int(1200*2/3)
  EXPECT_EQ(o.decay_steps, 100);  // int((1200-800)/4)
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 799), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 800), 1.0);  // 0.94^0
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 900), 0.94);
  EXPECT_NEAR(learning_rate_at(o, 1150), 0.94 * 0.94 * 0.94, 1e-15);
}

TEST(LearningRate, Luong5And10) {
  HParams hp;
  hp.stop_at_step = 1000;
  hp.decay_scheme = "luong5";
  auto o = train::schedule_options(hp, 0, 1);
  EXPECT_EQ(o.decay_start, 500);
  EXPECT_EQ(o.decay_steps, 100);
  hp.decay_scheme = "luong10";
  o = train::schedule_options(hp, 0, 1);
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
  auto o = train::schedule_options(hp, 1000, 1);
  EXPECT_EQ(o.decay_start, 0);
  EXPECT_EQ(o.decay_steps, 20);  // int(1000 * 2 / 100)
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 19), 0.1);
  EXPECT_NEAR(learning_rate_at(o, 20), 0.094, 1e-15);
  EXPECT_NEAR(learning_rate_at(o, 45), 0.1 * 0.94 * 0.94, 1e-15);
  // Workers divide the steps per epoch.
  EXPECT_EQ(train::schedule_options(hp, 1000, 2).decay_steps, 10);
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

// Goyal et al.'s warmup: update s (from 0) of the first W gets (s + 1) / W
// of the schedule's rate.
TEST(LearningRate, LinearWarmupRisesFromOneWthToTheSchedule) {
  ScheduleOptions o;
  o.learning_rate = 2.0;  // exponential without decay: constant 2
  o.warmup = "linear";
  o.warmup_steps = 8;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.25);  // 2 * 1/8
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 1), 0.5);   // 2 * 2/8
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 3), 1.0);   // 2 * 4/8
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 7), 2.0);   // 2 * 8/8
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 8), 2.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 1000), 2.0);
  o.type = "fixed";  // FastNN: fixed ignores every warmup
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 2.0);
}

// The factor multiplies the decayed value (Detectron's warmup), where t2t
// replaces the peak.
TEST(LearningRate, LinearWarmupScalesTheDecayingRate) {
  ScheduleOptions o;
  o.type = "polynomial";
  o.learning_rate = 1.0;
  o.end_learning_rate = 0.0;
  o.decay_start = 0;
  o.decay_steps = 8;
  o.warmup = "linear";
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.25);    // 1 * 1/4
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 1), 0.4375);  // (1 - 1/8) * 2/4
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 3), 0.625);   // (1 - 3/8) * 4/4
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 4), 0.5);     // 1 - 4/8
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 8), 0.0);
}

TEST(LearningRate, CosineStartsAfterTheLinearWarmup) {
  ScheduleOptions o;
  o.type = "cosine";
  o.learning_rate = 1.0;
  o.total_steps = 10;
  o.warmup = "linear";
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.25);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 2), 0.75);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 3), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 4), 1.0);     // cos(0)
  EXPECT_NEAR(learning_rate_at(o, 7), 0.5, 1e-15);   // t = 3 of 6: cos(pi/2)
  EXPECT_NEAR(learning_rate_at(o, 10), 0.0, 1e-15);  // cos(pi)
}

TEST(LearningRate, EpochsToStepsRoundsAsTFSlim) {
  EXPECT_EQ(epochs_to_steps(2.0, 1000, 100), 20);
  EXPECT_EQ(epochs_to_steps(5.0, 1281167, 2048), 3127);  // 6405835 / 2048 = 3127.8
  EXPECT_EQ(epochs_to_steps(0.5, 1000, 300), 1);         // 500 / 300
  EXPECT_EQ(epochs_to_steps(3.0, 0, 100), 0);            // unknown size
}

// configs/imagenet_gpu.cfg's schedule on 8 workers of 256: 0.8, warmed up
// linearly over 5 epochs, x0.1 every 30 epochs (decay steps and warmup
// from the global batch of 2048).
TEST(LearningRate, GoyalImageNetScheduleFromEpochs) {
  HParams hp;
  hp.learning_rate = 0.8;
  hp.batch_size = 256;
  hp.learning_rate_decay_factor = 0.1;
  hp.num_epochs_per_decay = 30.0;
  hp.warmup_scheme = "linear";
  hp.warmup_epochs = 5.0;
  auto o = train::schedule_options(hp, 1281167, 8);
  EXPECT_EQ(o.warmup, "linear");
  EXPECT_EQ(o.warmup_steps, 3127);  // int(1281167 * 5 / 2048)
  EXPECT_EQ(o.decay_steps, 18767);  // int(1281167 * 30 / 2048) = int(18767.09)
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0), 0.8 / 3127);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 1563), 0.8 * 1564 / 3127);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 3126), 0.8);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 18766), 0.8);
  EXPECT_NEAR(learning_rate_at(o, 18767), 0.08, 1e-16);
  EXPECT_NEAR(learning_rate_at(o, 3 * 18767), 0.0008, 1e-17);
}

TEST(LearningRate, WarmupEpochsServeT2TAndNoneTurnsThemOff) {
  HParams hp;
  hp.learning_rate = 3.0;
  hp.batch_size = 100;
  hp.warmup_epochs = 2.0;
  auto o = train::schedule_options(hp, 1000, 1);
  EXPECT_EQ(o.warmup, "t2t");
  EXPECT_EQ(o.warmup_steps, 20);                     // int(1000 * 2 / 100)
  EXPECT_NEAR(learning_rate_at(o, 10), 0.3, 1e-15);  // 3 * 0.01^(10/20)
  EXPECT_EQ(train::schedule_options(hp, 1000, 2).warmup_steps, 10);
  hp.warmup_scheme = "none";
  EXPECT_EQ(train::schedule_options(hp, 1000, 1).warmup_steps, 0);
}

// num_epochs set without stop_at_step: the run ends where the input does
// (num_epochs passes over a worker's samples, batches across epochs).
TEST(LearningRate, NumEpochsWithoutStopAtStepIsTheHorizon) {
  HParams hp;
  hp.num_epochs = 90;
  hp.batch_size = 256;
  EXPECT_EQ(train::resolve_stop_at_step(hp, 160145), 100);  // neither set: FastNN's 100
  hp.sources["num_epochs"] = "imagenet_gpu.cfg:30";
  EXPECT_TRUE(stop_from_num_epochs(hp));
  // ImageNet on 8 workers: 1281167 / 8 = 160145 samples each;
  // 90 * 160145 / 256 = 56300.97.
  EXPECT_EQ(train::resolve_stop_at_step(hp, 160145), 56300);
  hp.sources["stop_at_step"] = "command line";
  hp.stop_at_step = 500;
  EXPECT_FALSE(stop_from_num_epochs(hp));
  EXPECT_EQ(train::resolve_stop_at_step(hp, 160145), 500);

  HParams small;
  small.sources["num_epochs"] = "x.cfg:1";
  small.num_epochs = 3;
  small.batch_size = 100;
  small.learning_rate = 1.0;
  small.stop_at_step = train::resolve_stop_at_step(small, 1000);  // as the trainer does
  EXPECT_EQ(small.stop_at_step, 30);
  small.learning_rate_decay_type = "cosine";
  auto o = train::schedule_options(small, 1000, 1);
  EXPECT_EQ(o.total_steps, 30);
  EXPECT_NEAR(learning_rate_at(o, 15), 0.5, 1e-15);
  small.learning_rate_decay_type = "exponential";
  small.decay_scheme = "luong234";
  o = train::schedule_options(small, 1000, 1);
  EXPECT_EQ(o.decay_start, 20);  // int(30 * 2 / 3)
  EXPECT_EQ(o.decay_steps, 2);   // int((30 - 20) / 4)
}

TEST(LearningRate, AnUnknownOrTooShortHorizonIsAConfigError) {
  HParams hp;
  hp.sources["num_epochs"] = "x.cfg:1";
  EXPECT_THROW(train::resolve_stop_at_step(hp, 0), ConfigError);
  hp.stop_at_step = 100;
  hp.learning_rate_decay_type = "cosine";
  hp.sources["learning_rate_decay_type"] = "x.cfg:2";
  hp.batch_size = 10;
  hp.warmup_epochs = 1.0;  // 1000 / 10 = 100 steps: the whole horizon
  try {
    train::schedule_options(hp, 1000, 1);
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "x.cfg:2: learning_rate_decay_type: 'cosine' needs a horizon (100 steps, "
                 "from num_epochs) beyond the warmup (100 steps)");
  }
  hp.warmup_epochs = 0.5;  // 50 steps
  EXPECT_EQ(train::schedule_options(hp, 1000, 1).warmup_steps, 50);
}

// gradient_accumulation_steps=K: an optimizer step takes K batches, so the
// num_epochs horizon and the epoch-based decay and warmup count K times
// fewer steps.
TEST(LearningRate, AccumulatedStepsCountOptimizerSteps) {
  HParams hp;
  hp.sources["num_epochs"] = "x.cfg:1";
  hp.num_epochs = 3;
  hp.batch_size = 100;
  hp.gradient_accumulation_steps = 4;
  EXPECT_EQ(hp.images_per_step(), 400);
  hp.stop_at_step = train::resolve_stop_at_step(hp, 1000);
  EXPECT_EQ(hp.stop_at_step, 7);  // int(3 * 1000 / 400)
  hp.num_epochs_per_decay = 1.0;
  hp.warmup_scheme = "linear";
  hp.warmup_epochs = 2.0;
  hp.learning_rate_decay_type = "exponential";
  const auto o = train::schedule_options(hp, 1000, 2);  // two workers
  EXPECT_EQ(o.decay_steps, 1);                          // int(1000 / 800)
  EXPECT_EQ(o.warmup_steps, 2);                         // int(2 * 1000 / 800)
}

}  // namespace
}  // namespace fastnn::optim
