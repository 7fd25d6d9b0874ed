// TrainState: the one list of what a replica holds, to and from a
// checkpoint and through rank 0's broadcast.
#include "src/train/train_state.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "fastnn/errors.h"
#include "models/model_factory.h"

namespace fastnn::train {
namespace {

struct Replica {
  std::shared_ptr<models::ClassifierImpl> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  LossScaler scaler{[] {
    LossScaleOptions o;
    o.dynamic = true;
    return o;
  }()};
  std::unique_ptr<TrainState> state;

  explicit Replica(uint64_t seed) {
    torch::manual_seed(seed);
    models::ModelOptions mo;
    mo.num_classes = 10;
    mo.in_channels = 1;
    model = models::find_model("lenet").create(mo);
    std::vector<optim::Variable> vars;
    for (const auto& v : models::model_variables(*model)) {
      if (v.trainable) vars.push_back({v.name, v.tensor});
    }
    optim::MomentumOptions o;
    o.momentum = 0.9;
    optimizer = std::make_unique<optim::Momentum>(std::move(vars), o);
    state = std::make_unique<TrainState>(*model, *optimizer, scaler, 0.99);
  }
  // One update, so slots, EMA and counters all move.
  void train_step() {
    auto out = model->forward(torch::randn({4, 1, 28, 28}));
    out.logits.sum().backward();
    optimizer->step(0.01);
    state->update_moving_averages();
    ++state->step;
    state->batches_consumed += 2;
    scaler.update(false);
  }
};

void expect_equal(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, v] : a) {
    ASSERT_TRUE(b.count(k)) << k;
    EXPECT_TRUE(torch::equal(v, b.at(k))) << k;
  }
}

TEST(TrainState, CheckpointHoldsEveryPartOfTheReplica) {
  Replica r(1);
  r.train_step();
  const TensorMap m = r.state->to_checkpoint();
  EXPECT_TRUE(m.count("model/LeNet/conv1/weights"));
  EXPECT_TRUE(m.count("model/LeNet/conv1/weights/ExponentialMovingAverage"));
  EXPECT_TRUE(m.count("optimizer/LeNet/conv1/weights/Momentum"));
  EXPECT_EQ(m.at("global_step").item<int64_t>(), 1);
  EXPECT_EQ(m.at("input/batches_consumed").item<int64_t>(), 2);
  EXPECT_EQ(m.at("loss_scale/scale").item<double>(), 16384.0);
  EXPECT_TRUE(m.count("rng/torch_cpu"));
}

TEST(TrainState, RestoresExactlyWhatItSaved) {
  Replica a(1);
  a.train_step();
  a.train_step();
  const TensorMap saved = a.state->to_checkpoint();
  Replica b(2);
  b.state->from_checkpoint(saved, "test");
  expect_equal(saved, b.state->to_checkpoint());
  EXPECT_EQ(b.state->step, 2);
  EXPECT_EQ(b.scaler.scale(), a.scaler.scale());
}

// Exact resume: the generator continues where the checkpoint left it.
TEST(TrainState, RestoresTheGeneratorsItSaved) {
  Replica a(1);
  a.train_step();
  const TensorMap saved = a.state->to_checkpoint();
  EXPECT_FALSE(saved.count("rng/torch_cuda"));  // a CPU replica
  const auto next = torch::randn({8});
  Replica b(2);
  b.state->from_checkpoint(saved, "test");
  EXPECT_TRUE(torch::randn({8}).equal(next));
}

// On a GPU the GPU's generator (dropout's) is saved and restored too, once
// the restored state is on the GPU. Skipped without one.
TEST(TrainState, RestoresTheGpuGeneratorOnAGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  Replica a(1);
  a.state->to(gpu);
  const TensorMap saved = a.state->to_checkpoint();
  ASSERT_TRUE(saved.count("rng/torch_cuda"));
  const auto next = torch::randn({8}, torch::TensorOptions().device(gpu)).cpu();
  Replica b(2);
  b.state->from_checkpoint(saved, "test");
  b.state->to(gpu);
  EXPECT_TRUE(torch::randn({8}, torch::TensorOptions().device(gpu)).cpu().equal(next));
}

// Checkpoints older than the generator keys still load, leaving the
// generator as it was.
TEST(TrainState, ACheckpointWithoutGeneratorsStillLoads) {
  Replica a(1);
  TensorMap saved = a.state->to_checkpoint();
  saved.erase("rng/torch_cpu");
  Replica b(2);
  torch::manual_seed(9);
  const auto expected = torch::randn({8});
  torch::manual_seed(9);
  b.state->from_checkpoint(saved, "test");
  EXPECT_TRUE(torch::randn({8}).equal(expected));
}

TEST(TrainState, AnotherOptimizersCheckpointIsAConfigError) {
  Replica a(1);
  TensorMap saved = a.state->to_checkpoint();
  for (auto it = saved.begin(); it != saved.end();) {
    it = it->first.rfind("optimizer/", 0) == 0 ? saved.erase(it) : std::next(it);
  }
  Replica b(2);
  EXPECT_THROW(b.state->from_checkpoint(saved, "test"), ConfigError);
}

TEST(TrainState, BroadcastMakesAReplicaEqualToRankZeros) {
  Replica chief(1);
  chief.train_step();
  Replica worker(2);
  // What the collective does: every tensor takes rank 0's value, in the
  // one order both replicas list them in.
  std::vector<torch::Tensor> sent;
  chief.state->broadcast_from_chief([&](const std::vector<torch::Tensor>& t) { sent = t; });
  worker.state->broadcast_from_chief([&](const std::vector<torch::Tensor>& t) {
    ASSERT_EQ(t.size(), sent.size());
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < t.size(); ++i) t[i].copy_(sent[i]);
  });
  TensorMap a = chief.state->to_checkpoint(), b = worker.state->to_checkpoint();
  a.erase("rng/torch_cpu");  // each rank keeps its own generator
  b.erase("rng/torch_cpu");
  expect_equal(a, b);
}

}  // namespace
}  // namespace fastnn::train
