// The step's two ways of reading its numbers, on the CPU: every step (the
// CPU's way) and only when asked (a GPU run's way, read_every_step=false,
// exercised here on the CPU where both give the same arithmetic).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fastnn/errors.h"
#include "src/train/loss.h"
#include "tests/train/step_rig.h"

namespace fastnn::train {
namespace {

using testing::inf_at;
using testing::StepRig;
constexpr int64_t kBatch = StepRig::kBatch;

StepRig rig(bool read_every_step, GradientFault fault = {}) {
  testing::StepRigOptions o;
  o.read_every_step = read_every_step;
  o.fault = std::move(fault);
  return StepRig(std::move(o));
}

TEST(Step, StepsThatDoNotReadTrainTheSameWeights) {
  StepRig every = rig(true), asked = rig(false);
  for (int i = 0; i < 7; ++i) {
    const bool wanted = i % 3 == 2;
    const StepStats a = every.run(i, wanted);
    const StepStats b = asked.run(i, wanted);
    EXPECT_TRUE(a.metrics_read);
    EXPECT_EQ(b.metrics_read, wanted) << "step " << b.global_step;
    EXPECT_EQ(b.global_step, a.global_step);
    EXPECT_EQ(b.batch_samples, kBatch);
    if (wanted) {
      EXPECT_EQ(b.loss, a.loss);
      EXPECT_EQ(b.accuracy, a.accuracy);
      EXPECT_EQ(b.gradient_norm, a.gradient_norm);
    } else {
      EXPECT_EQ(b.loss, 0);
    }
  }
  const auto pa = every.built.model->parameters();
  const auto pb = asked.built.model->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
  // The 7th step did not read; settle() reads it: the same as reading then.
  const StepStats last = every.run(7, false);
  const StepStats unread = asked.run(7, false);
  EXPECT_FALSE(unread.metrics_read);
  const LastStepMetrics settled = asked.step->settle();
  EXPECT_TRUE(settled.read);
  EXPECT_EQ(settled.loss, last.loss);
  EXPECT_EQ(settled.accuracy, last.accuracy);
  EXPECT_FALSE(every.step->settle().read);
  EXPECT_FALSE(asked.step->settle().read);  // nothing left unread
}

TEST(Step, InfOnAStepThatDidNotReadStopsTheNextStepThatReads) {
  StepRig asked = rig(false, inf_at(2));  // the step that ends at global_step 3
  for (int i = 0; i < 5; ++i) EXPECT_NO_THROW(asked.run(i, false)) << i;
  try {
    asked.run(5, true);
    FAIL() << "no DivergedError";
  } catch (const DivergedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Inf/NaN at global_step 3 "), std::string::npos) << what;
    EXPECT_NE(what.find("seen at global_step 6"), std::string::npos) << what;
  }
}

TEST(Step, SettleStopsARunWhoseLastStepsHadInf) {
  StepRig asked = rig(false, inf_at(1));
  for (int i = 0; i < 3; ++i) asked.run(i, false);
  EXPECT_THROW(asked.step->settle(), DivergedError);

  // Read every step, the same Inf is the NaN hook's to report: the step
  // skips the update and says so in its numbers.
  StepRig every = rig(true, inf_at(1));
  every.run(0, false);
  const StepStats s = every.run(1, false);
  EXPECT_TRUE(s.metrics_read);
  EXPECT_FALSE(std::isfinite(s.gradient_norm));
}

// The host reads of docs/design/gpu.md, "The GPU step", held through the
// counting seam every read goes through: a step that reads its numbers
// reads once, one that does not reads nothing, settle() once; dynamic loss
// scaling reads its one flag (with the numbers) every step.
TEST(Step, HostReadsPerStepAreTheDocumentedOnes) {
  StepRig every = rig(true), asked = rig(false);
  for (int i = 0; i < 6; ++i) {
    const bool wanted = i == 4;
    int64_t before = host_reads();
    asked.run(i, wanted);
    EXPECT_EQ(host_reads() - before, wanted ? 1 : 0) << "step " << i;
    before = host_reads();
    every.run(i, false);
    EXPECT_EQ(host_reads() - before, 1) << "step " << i;
  }
  int64_t before = host_reads();
  EXPECT_TRUE(asked.step->settle().read);
  EXPECT_EQ(host_reads() - before, 1);
  testing::StepRigOptions o;
  o.read_every_step = false;
  o.loss_scaling = "dynamic";
  StepRig dynamic(std::move(o));
  before = host_reads();
  for (int i = 0; i < 3; ++i) dynamic.run(i, false);
  EXPECT_EQ(host_reads() - before, 3);
}

// Clipping does not make a step read: the factor clip / max(norm, clip)
// is applied on the device from the norm's tensor, the same arithmetic as
// from the norm read (weights bit-identical).
TEST(Step, ClippingWithoutReadingMatchesClippingAfterReading) {
  auto clipped = [](bool read_every_step) {
    testing::StepRigOptions o;
    o.read_every_step = read_every_step;
    o.max_gradient_norm = 0.05;  // below lenet's first norms: clipping acts
    return StepRig(std::move(o));
  };
  StepRig every = clipped(true), asked = clipped(false);
  bool clipped_once = false;
  for (int i = 0; i < 5; ++i) {
    const StepStats a = every.run(i, false);
    const int64_t before = host_reads();
    asked.run(i, false);
    EXPECT_EQ(host_reads(), before) << "step " << i;
    clipped_once = clipped_once || a.gradient_norm > 0.05;
  }
  EXPECT_TRUE(clipped_once);
  const auto pa = every.built.model->parameters();
  const auto pb = asked.built.model->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
}

}  // namespace
}  // namespace fastnn::train

namespace fastnn::train {
namespace {

testing::StepRigOptions accumulating(int64_t k) {
  testing::StepRigOptions o;
  o.accumulation_steps = k;
  return o;
}

// lenet without dropout or BatchNorm, Adam and L2: 4 micro-batches of 4
// are one batch of 16 (the L2 term and the update once per step), up to
// float32's summation order. Adam's update hides a gradient off by a
// constant factor (a missing division by 4): the gradient norm shows it.
TEST(Step, AccumulatedMicroBatchesTrainAsTheirWholeBatch) {
  StepRig whole(accumulating(1)), micro(accumulating(4));
  for (int i = 0; i < 5; ++i) {
    const StepStats a = whole.run(i, true);
    const StepStats b = micro.run(i, true);
    EXPECT_EQ(b.global_step, a.global_step);
    EXPECT_EQ(b.batch_samples, kBatch);
    EXPECT_NEAR(b.loss, a.loss, 1e-5 * std::max(1.0, std::abs(a.loss)));
    EXPECT_DOUBLE_EQ(b.accuracy, a.accuracy);
    EXPECT_NEAR(b.gradient_norm, a.gradient_norm, 1e-5 * std::max(1.0, a.gradient_norm));
  }
  EXPECT_EQ(micro.state->step, 5);
  EXPECT_EQ(micro.state->batches_consumed, 20);
  EXPECT_EQ(whole.state->batches_consumed, 5);
  const auto pa = whole.built.model->named_parameters();
  const auto pb = micro.built.model->named_parameters();
  for (const auto& p : pa) {
    const auto& x = p.value();
    const auto& y = pb[p.key()];
    const double scale = std::max(x.abs().max().item<double>(), 1e-6);
    EXPECT_LE((x - y).abs().max().item<double>() / scale, 1e-5) << p.key();
  }
}

TEST(Step, InputEndingInsideAnAccumulatedStepAppliesNothing) {
  testing::StepRigOptions o = accumulating(4);
  o.input_micro_batches = 2;
  StepRig rig(std::move(o));
  std::vector<torch::Tensor> before;
  for (const auto& p : rig.built.model->parameters()) before.push_back(p.detach().clone());
  try {
    rig.run(0, true);
    FAIL() << "no InputEndedInsideStep";
  } catch (const InputEndedInsideStep& e) {
    EXPECT_EQ(e.micro_batches, 2);
  }
  EXPECT_EQ(rig.state->step, 0);
  EXPECT_EQ(rig.state->batches_consumed, 2);
  const auto after = rig.built.model->parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(before[i], after[i])) << i;
}

}  // namespace
}  // namespace fastnn::train
