// W=2 workers × batch b for k steps against one worker × batch 2b on the
// same samples, through the trainer's own distributed step (Gloo over
// loopback, one thread per worker); and with gradient accumulation, K
// micro-batches of b per worker against one worker's K micro-batches of 2b.
// The reducer's hooks stay disarmed during the first K-1 backwards (no
// collective until the last) and each micro-batch's BatchNorm moments are
// pooled in the step's one all-reduce.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "models/layers.h"
#include "models/model_factory.h"
#include "src/dist/coordinator.h"
#include "src/dist/process_group.h"
#include "src/optim/optimizers.h"
#include "src/train/batch_norm_pool.h"
#include "src/train/builder.h"
#include "src/train/distributed_step.h"
#include "src/train/loss.h"

namespace fastnn::train {
namespace {

using Model = std::shared_ptr<models::ClassifierImpl>;

constexpr int kWorld = 2;
constexpr int64_t kBatch = 4;  // per worker
constexpr int kSteps = 4;

// conv + BatchNorm over NCHW, then a fully connected layer + BatchNorm
// over NC: both kinds of per-channel counts.
class TinyBnNet : public models::ClassifierImpl {
 public:
  TinyBnNet() : ClassifierImpl("Tiny") {
    models::ConvOptions c;
    c.in_channels = 1;
    c.out_channels = 6;
    c.bn.decay = 0.9;
    c.bn.scale = true;
    conv_ = register_module("conv1", models::SlimConv(c));
    fc_ = register_module("fc", torch::nn::Linear(6, 10));
    models::BatchNormOptions b;
    b.decay = 0.5;
    bn_ = register_module("fc_bn", models::TfBatchNorm(10, b));
  }
  models::ModelOutput forward(torch::Tensor x) override {
    return {bn_->forward(before_last_bn(x)), {}};
  }
  torch::Tensor before_last_bn(const torch::Tensor& x) {
    return fc_->forward(conv_->forward(x).mean({2, 3}));
  }
  models::SlimConv& conv() { return conv_; }
  models::TfBatchNorm& last_bn() { return bn_; }

 private:
  models::SlimConv conv_{nullptr};
  torch::nn::Linear fc_{nullptr};
  models::TfBatchNorm bn_{nullptr};
};

Model make_model(bool batch_norm) {
  torch::manual_seed(11);
  if (batch_norm) return std::make_shared<TinyBnNet>();
  models::ModelOptions o;
  o.num_classes = 10;
  o.in_channels = 1;
  o.dropout_keep_prob = 1.0;  // dropout masks would differ by design
  auto m = models::find_model("lenet").create(o);
  // In float64. The two sides sum in other orders; in float32 a ReLU or a
  // max-pool whose inputs differ by that last digit could pick the other
  // side, a finite jump: with some initial weights (or OMP_NUM_THREADS=1
  // against 2) the weights then differed by 1e-3 after 4 steps.
  m->to(torch::kFloat64);
  return m;
}

HParams hparams() {
  HParams hp;
  hp.optimizer = "momentum";
  hp.momentum = 0.9;
  // A calm regime: inputs of std 0.1 (LeNet's first loss ~2.6, near
  // chance's 2.3) and a small rate. At std 1 and 0.05 LeNet started at a
  // loss of 15 and jumped to hundreds.
  hp.learning_rate = 0.005;
  hp.batch_size = kBatch;
  hp.tensor_fusion_max_bytes = 40000;  // several buckets for lenet
  hp.worker_timeout_secs = 30;
  return hp;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const HParams& hp, const Model& m) {
  std::vector<optim::Variable> vars;
  int i = 0;
  for (auto& p : m->parameters()) vars.push_back({"v" + std::to_string(i++), p});
  return optim::create_optimizer(optimizer_options(hp), std::move(vars));
}

struct Data {
  // per step and micro-batch, 2b each
  std::vector<std::vector<torch::Tensor>> images, labels;
};

Data make_data(int64_t size, int micro, torch::Dtype dtype) {
  torch::manual_seed(5);
  Data d;
  d.images.resize(kSteps);
  d.labels.resize(kSteps);
  for (int s = 0; s < kSteps; ++s) {
    for (int j = 0; j < micro; ++j) {
      d.images[s].push_back(torch::randn({kWorld * kBatch, 1, size, size}, dtype) * 0.1);
      d.labels[s].push_back(torch::randint(0, 10, {kWorld * kBatch}, torch::kInt64));
    }
  }
  return d;
}

// Worker r's rows: record i goes to worker i mod W, as the pipeline shards.
torch::Tensor rows_of(const torch::Tensor& t, int rank) {
  return t.index({torch::arange(rank, t.size(0), kWorld)});
}

// One worker × batch 2b. With BatchNorm, forward normalizes each worker's
// half by its own statistics (as the workers do, like DDP without SyncBN),
// and each layer's moving statistics are updated with the statistics of
// the 2b values that layer saw: for the first layer the 2b input batch
// itself, for a later one its inputs as computed half by half.
// With K micro-batches: the gradients of the K losses / K summed, the
// moving statistics updated once per micro-batch.
void train_reference(const Model& m, const Data& d, bool batch_norm) {
  const HParams hp = hparams();
  auto opt = make_optimizer(hp, m);
  m->train();
  for (int s = 0; s < kSteps; ++s) {
    m->zero_grad(/*set_to_none=*/false);
    const int micro = static_cast<int>(d.images[s].size());
    for (int j = 0; j < micro; ++j) {
      const auto& images = d.images[s][j];
      const auto& labels = d.labels[s][j];
      if (!batch_norm) {
        (classification_loss(m->forward(images).logits, labels, 0) / micro).backward();
        continue;
      }
      auto& net = dynamic_cast<TinyBnNet&>(*m);
      std::vector<torch::Tensor> before;
      for (auto& b : m->buffers()) before.push_back(b.clone());
      torch::Tensor loss = torch::zeros({});
      std::vector<torch::Tensor> last_inputs;
      for (int r = 0; r < kWorld; ++r) {
        auto out = m->forward(rows_of(images, r));
        last_inputs.push_back(net.before_last_bn(rows_of(images, r)).detach());
        loss = loss + classification_loss(out.logits, rows_of(labels, r), 0) / kWorld;
      }
      (loss / micro).backward();
      torch::NoGradGuard no_grad;
      auto buffers = m->buffers();
      for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(before[i]);
      net.conv()->forward(images);
      net.last_bn()->forward(torch::cat(last_inputs));
    }
    opt->step(hp.learning_rate);
  }
}

void train_worker(int rank, int port, const Model& m, const Data& d, std::vector<double>* losses) {
  HParams hp = hparams();
  const int micro = static_cast<int>(d.images[0].size());
  hp.gradient_accumulation_steps = micro;
  auto opt = make_optimizer(hp, m);
  dist::ClusterSpec spec;
  spec.rank = rank;
  spec.world_size = kWorld;
  spec.coordinator = "127.0.0.1:" + std::to_string(port);
  std::vector<torch::Tensor> trainable;
  for (auto& p : m->parameters()) trainable.push_back(p);
  DistributedStep ds(distributed_step_options(hp), spec,
                     dist::session_options(hp, dist::process_environment()),
                     torch::Device(torch::kCPU), *m, trainable);
  struct Finish {
    DistributedStep& ds;
    ~Finish() { ds.finish(0); }
  } finish{ds};
  const int64_t size = d.images[0][0].size(2);
  ds.measure_batch_norm([&](const torch::Tensor& x) { m->forward(x); }, {1, size, size});
  std::vector<torch::Tensor> state;
  for (auto& v : m->named_parameters()) state.push_back(v.value());
  for (auto& v : m->named_buffers()) state.push_back(v.value());
  ds.broadcast_from_chief(state, "initial state");
  m->train();
  for (int s = 0; s < kSteps; ++s) {
    m->zero_grad(/*set_to_none=*/false);
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    torch::Tensor head = torch::zeros({3}, f64);
    for (int j = 0; j < micro; ++j) {
      auto x = rows_of(d.images[s][j], rank);
      auto y = rows_of(d.labels[s][j], rank);
      auto out = m->forward(x);
      auto loss = classification_loss(out.logits, y, 0);
      head = head + torch::stack({loss.detach().to(torch::kFloat64) * double(kBatch),
                                  out.logits.argmax(1).eq(y).sum().to(torch::kFloat64),
                                  torch::full({}, double(kBatch), f64)});
      if (j + 1 < micro) {
        (loss / micro).backward();
        ds.keep_micro_batch_moments();
        continue;
      }
      ds.before_backward(s);
      (micro > 1 ? loss / micro : loss).backward();
    }
    const auto summed = ds.reduce(head, {});
    ASSERT_EQ(summed.numel(), kStepHeadSize);
    const std::vector<double> host = read_scalars({summed});
    auto c = ds.combine(host.data(), /*agree_on_stop=*/true);
    EXPECT_EQ(c.samples, kWorld * kBatch * micro);
    EXPECT_FALSE(c.stop);
    losses->push_back(c.loss);
    opt->step(hp.learning_rate);
  }
}

void expect_same(const Model& a, const Model& b) {
  auto va = a->named_parameters();
  auto vb = b->named_parameters();
  auto check = [](const std::string& name, const torch::Tensor& x, const torch::Tensor& y) {
    const double scale = std::max(y.abs().max().item<double>(), 1e-6);
    const double diff = (x - y).abs().max().item<double>();
    EXPECT_LE(diff / scale, 1e-5) << name << ": max |diff| " << diff << ", max |ref| " << scale;
  };
  for (const auto& p : va) check(p.key(), p.value(), vb[p.key()]);
  auto ba = a->named_buffers();
  auto bb = b->named_buffers();
  for (const auto& p : ba) check(p.key(), p.value(), bb[p.key()]);
}

void run_equivalence(bool batch_norm, int64_t size, int micro = 1) {
  setenv("FASTNN_JOB_TOKEN", "equivalence-test", 1);
  torch::set_num_threads(1);
  const Data d = make_data(size, micro, batch_norm ? torch::kFloat32 : torch::kFloat64);
  Model reference = make_model(batch_norm);
  std::vector<Model> workers{make_model(batch_norm), make_model(batch_norm)};
  {
    // Rank 1 starts from other weights: the broadcast must replace them.
    torch::NoGradGuard no_grad;
    for (auto& p : workers[1]->parameters()) p.add_(0.5);
  }
  train_reference(reference, d, batch_norm);
  const int port = dist::pick_free_port();
  std::vector<std::vector<double>> losses(kWorld);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kWorld);
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      try {
        train_worker(r, port, workers[r], d, &losses[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  EXPECT_EQ(losses[0], losses[1]);  // every worker logs the same loss
  expect_same(workers[0], reference);
  expect_same(workers[1], reference);
}

TEST(DistributedEquivalenceTest, LenetWithoutBatchNormMatchesOneWorkerWithDoubleBatch) {
  run_equivalence(/*batch_norm=*/false, 28);
}

TEST(DistributedEquivalenceTest, BatchNormModelMatchesOneWorkerWithDoubleBatch) {
  run_equivalence(/*batch_norm=*/true, 8);
}

TEST(DistributedEquivalenceTest, AccumulatedLenetMatchesOneWorkerWithDoubleMicroBatches) {
  run_equivalence(/*batch_norm=*/false, 28, /*micro=*/3);
}

TEST(DistributedEquivalenceTest, AccumulatedBatchNormModelPoolsEveryMicroBatch) {
  run_equivalence(/*batch_norm=*/true, 8, /*micro=*/3);
}

TEST(BatchNormPoolTest, MeasuresMomentumAndPerImageCounts) {
  TinyBnNet net;
  BatchNormPool pool(net);
  ASSERT_EQ(pool.size(), 2u);
  EXPECT_NEAR(pool.momenta()[0], 0.1, 1e-7);
  EXPECT_NEAR(pool.momenta()[1], 0.5, 1e-7);
  auto before = net.named_buffers()["conv1.BatchNorm.moving_variance"].clone();
  pool.measure_counts([&](const torch::Tensor& x) { net.forward(x); }, {1, 8, 8});
  EXPECT_EQ(pool.counts(), (std::vector<int64_t>{64, 1}));
  // The measurement leaves the statistics as they were.
  EXPECT_TRUE(net.named_buffers()["conv1.BatchNorm.moving_variance"].equal(before));
}

// The pooling runs over one flat buffer (a few launches for any number of
// layers); element by element it is the per-layer formula it replaced, so
// CPU runs stay bit-identical. That formula, written out per layer here.
TEST(BatchNormPoolTest, FlatPoolingIsThePerLayerFormulaBitForBit) {
  torch::manual_seed(4);
  TinyBnNet net;
  BatchNormPool pool(net);
  pool.measure_counts([&](const torch::Tensor& x) { net.forward(x); }, {1, 8, 8});
  net.train();
  torch::NoGradGuard no_grad;
  net.forward(torch::randn({4, 1, 8, 8}));  // moving statistics away from their init
  pool.snapshot();
  std::vector<torch::Tensor> means, vars;
  for (const auto& b : net.named_buffers()) {
    if (b.key().find("moving_mean") != std::string::npos) means.push_back(b.value());
    if (b.key().find("moving_variance") != std::string::npos) vars.push_back(b.value());
  }
  ASSERT_EQ(means.size(), 2u);
  std::vector<torch::Tensor> prev_mean, prev_var;
  for (size_t i = 0; i < means.size(); ++i) {
    prev_mean.push_back(means[i].to(torch::kFloat64));
    prev_var.push_back(vars[i].to(torch::kFloat64));
  }
  net.forward(torch::randn({kBatch, 1, 8, 8}));
  const auto m = pool.momenta();
  const auto counts = pool.counts();
  std::vector<torch::Tensor> want_means, want_seconds;
  for (size_t i = 0; i < means.size(); ++i) {
    auto mean = (means[i].to(torch::kFloat64) - (1 - m[i]) * prev_mean[i]) / m[i];
    auto var = (vars[i].to(torch::kFloat64) - (1 - m[i]) * prev_var[i]) / m[i];
    const int64_t n = counts[i] * kBatch;
    if (n > 1) var = var * (static_cast<double>(n - 1) / static_cast<double>(n));
    want_seconds.push_back(var + mean * mean);
    want_means.push_back(std::move(mean));
  }
  want_means.insert(want_means.end(), want_seconds.begin(), want_seconds.end());
  const auto local = pool.local_moments(kBatch);
  EXPECT_TRUE(torch::equal(local, torch::cat(want_means)));
  // Two workers with these moments, pooled and applied.
  const auto summed = local * 2;
  std::vector<torch::Tensor> want_mean_buf, want_var_buf;
  int64_t offset = 0;
  const int64_t total = local.numel() / 2;
  for (size_t i = 0; i < means.size(); ++i) {
    const int64_t c = means[i].numel();
    auto [mean, var] =
        pooled_moments(summed.narrow(0, offset, c), summed.narrow(0, total + offset, c), 2);
    offset += c;
    const int64_t n = counts[i] * kBatch * 2;
    if (n > 1) var = var * (static_cast<double>(n) / static_cast<double>(n - 1));
    want_mean_buf.push_back(((1 - m[i]) * prev_mean[i] + m[i] * mean).to(torch::kFloat32));
    want_var_buf.push_back(((1 - m[i]) * prev_var[i] + m[i] * var).to(torch::kFloat32));
  }
  pool.apply(summed, 2, kBatch);
  for (size_t i = 0; i < means.size(); ++i) {
    EXPECT_TRUE(torch::equal(means[i], want_mean_buf[i])) << i;
    EXPECT_TRUE(torch::equal(vars[i], want_var_buf[i])) << i;
  }
}

TEST(BatchNormPool, PooledMomentsMatchTheConcatenatedData) {
  torch::manual_seed(3);
  auto a = torch::randn({50, 4}, torch::kFloat64) * 2 + 1;
  auto b = torch::randn({50, 4}, torch::kFloat64) * 0.5 - 3;
  auto second = [](const torch::Tensor& x) {
    return x.var(0, /*unbiased=*/false) + x.mean(0).square();
  };
  auto [mean, var] = pooled_moments(a.mean(0) + b.mean(0), second(a) + second(b), 2);
  auto all = torch::cat({a, b});
  EXPECT_TRUE(torch::allclose(mean, all.mean(0), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(var, all.var(0, /*unbiased=*/false), 1e-12, 1e-12));
}

}  // namespace
}  // namespace fastnn::train
