// GPU training, end to end (label gpu; built with a CUDA LibTorch only).
// Every test needs a CUDA device and is reported as skipped without one
// (CI's CUDA leg builds and runs this binary on a machine without a GPU).
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/compat/torch_compat.h"
#include "src/cuda/cuda_device.h"
#include "src/dist/coordinator.h"
#include "src/dist/gradient_reducer.h"
#include "src/dist/process_group.h"
#include "src/dist/store_adapter.h"
#include "src/train/device.h"
#include "tests/dist/memory_store.h"
#include "tests/integration/process.h"
#include "tests/test_files.h"
#include "tests/test_paths.h"
#include "tests/train/step_rig.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;
using testing::run;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "gpu";

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    fs::create_directories(kTmp);
  }
  static std::string fresh(const std::string& name) { return testing::cleared_dir(kTmp / name); }
  static std::string log(const std::string& name) { return (kTmp / (name + ".log")).string(); }
  // lenet on mock data: the whole path (pipeline, pinned copies, step,
  // checkpoints) in seconds. One process whatever the machine: without
  // nproc_per_node the trainer starts one worker per GPU where it sees
  // several, which would change every expectation here.
  static std::vector<std::string> train(const std::string& dir, int stop,
                                        std::vector<std::string> extra) {
    std::vector<std::string> a = {kBin + "/train_image_classifier",
                                  "--nproc_per_node=1",
                                  "--model_name=lenet",
                                  "--dataset_name=mock",
                                  "--num_classes=10",
                                  "--batch_size=32",
                                  "--num_sample_per_epoch=100000",
                                  "--optimizer=momentum",
                                  "--learning_rate=0.01",
                                  "--log_loss_every_n_iters=10",
                                  "--num_preprocessing_threads=2",
                                  "--stop_at_step=" + std::to_string(stop),
                                  "--save_checkpoints_steps=10",
                                  "--max_to_keep=0",
                                  "--train_dir=" + dir};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static nlohmann::json metrics(const std::string& dir) {
    nlohmann::json j;
    std::ifstream(fs::path(dir) / "metrics.json") >> j;
    return j;
  }
};

TEST_F(Gpu, TrainsInFp32Fp16AndBf16) {
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::string says;
  };
  std::vector<Case> cases = {
      {"fp32", {"--use_fp16=False"}, "training on cuda:0"},
      {"fp16", {"--use_fp16=True", "--mixed_precision=fp16"}, "float16 autocast on CUDA"},
  };
  if (cuda::has_bfloat16(torch::Device(torch::kCUDA, 0))) {
    cases.push_back(
        {"bf16", {"--use_fp16=True", "--mixed_precision=bf16"}, "bfloat16 autocast on CUDA"});
  }
  for (const auto& c : cases) {
    const std::string dir = fresh("precision_" + c.name);
    auto flags = c.flags;
    flags.push_back("--device=cuda");
    auto r = run(train(dir, 40, flags), log("precision_" + c.name));
    ASSERT_EQ(r.exit_code, 0) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find("CUDA math (PyTorch's defaults unless cudnn_benchmark is set): "
                            "TF32 matmul off, cuDNN TF32 on, cudnn.benchmark off"),
              std::string::npos)
        << c.name << "\n"
        << r.output;
    const auto m = metrics(dir);
    EXPECT_EQ(m["final_step"], 40) << c.name;
    EXPECT_TRUE(std::isfinite(m["loss"].get<double>())) << c.name;
    EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-40")) << c.name;
  }
}

TEST_F(Gpu, CheckpointsMoveBetweenGpuAndCpu) {
  const std::string gpu_first = fresh("gpu_then_cpu");
  auto r = run(train(gpu_first, 10, {"--device=cuda", "--use_fp16=False"}), log("g1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run(train(gpu_first, 20, {"--device=cpu", "--use_fp16=False"}), log("g2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(global_step 10)"), std::string::npos) << r.output;
  EXPECT_EQ(metrics(gpu_first)["final_step"], 20);

  const std::string cpu_first = fresh("cpu_then_gpu");
  r = run(train(cpu_first, 10, {"--device=cpu", "--use_fp16=False"}), log("c1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run(train(cpu_first, 20, {"--device=cuda", "--use_fp16=False"}), log("c2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(global_step 10)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("training on cuda:0"), std::string::npos) << r.output;
  EXPECT_EQ(metrics(cpu_first)["final_step"], 20);
}

TEST_F(Gpu, DynamicLossScalingSkipsAnOverflowingStepOnCuda) {
  const std::string dir = fresh("overflow");
  // Starts at 128, not the default 2^15: on an H200 the first steps' real
  // fp16 gradients overflow at 32768 down to 4096 (steps 0, 1 and 3), which
  // would hide the injected step among them.
  auto args = train(dir, 20,
                    {"--device=cuda", "--use_fp16=True", "--mixed_precision=fp16",
                     "--loss_scaling=dynamic", "--loss_scale=128"});
  args.insert(args.begin(), {"/usr/bin/env", "FASTNN_FAILPOINTS=inf_grad_steps=5"});
  auto r = run(args, log("overflow"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("global_step 5: Inf/NaN gradients at loss scale 128"), std::string::npos)
      << r.output;
  const auto m = metrics(dir);
  EXPECT_EQ(m["steps_skipped_overflow"], 1) << r.output;
  EXPECT_EQ(m["loss_scale"], 64.0) << r.output;
}

// Counts the host synchronisations LibTorch's CUDA sync debug mode reports
// (a warning per synchronising call) while it is alive.
class SyncCounter : public c10::WarningHandler {
 public:
  SyncCounter() : previous_(c10::WarningUtils::get_warning_handler()) {
    c10::WarningUtils::set_warning_handler(this);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  }
  ~SyncCounter() override {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    c10::WarningUtils::set_warning_handler(previous_);
  }
#if FASTNN_TORCH_AT_LEAST(2, 0)
  void process(const c10::Warning& warning) override { count(warning.msg()); }
#else
  void process(const c10::SourceLocation&, const std::string& msg, bool) override { count(msg); }
#endif
  int syncs = 0;
  std::string others;

 private:
  void count(const std::string& msg) {
    if (msg.find("synchroniz") != std::string::npos) {
      ++syncs;
    } else {
      others += msg + "\n";
    }
  }
  c10::WarningHandler* previous_;
};

// How often a step makes the host wait for the GPU. Every number it needs
// is read in one copy: once a step under dynamic loss scaling (whose skip
// decision needs the overflow flag), and otherwise only on the steps a hook
// asks for; the others read nothing. Adam (whose bias correction could
// read two slots) and weight decay (one read per weight) are on.
TEST_F(Gpu, AStepSynchronisesTheHostOnceOrNotAtAll) {
  const torch::Device dev(torch::kCUDA, 0);
  struct Case {
    std::string name;
    std::string loss_scaling;
    train::Autocast autocast;
    bool wanted;
    int syncs;
  };
  const std::vector<Case> cases = {
      {"fp16, dynamic loss scaling, not asked", "dynamic", train::Autocast::kCudaFloat16, false, 1},
      {"fp32, asked", "static", train::Autocast::kOff, true, 1},
      {"fp32, not asked", "static", train::Autocast::kOff, false, 0},
  };
  for (const Case& c : cases) {
    train::testing::StepRigOptions o;
    o.device = dev;
    o.read_every_step = !train::host_reads_synchronise(dev);
    o.loss_scaling = c.loss_scaling;
    o.autocast = c.autocast;
    train::testing::StepRig rig(std::move(o));
    rig.run(0, true);  // cuDNN's autotuner and the allocator warm up
    for (int i = 1; i < 6; ++i) {
      int syncs = 0;
      std::string others;
      train::StepStats s;
      {
        SyncCounter counter;
        s = rig.run(i, c.wanted);
        syncs = counter.syncs;
        others = counter.others;
      }
      EXPECT_EQ(syncs, c.syncs) << c.name << ", step " << s.global_step << "; other warnings:\n"
                                << others;
      EXPECT_EQ(s.metrics_read, c.syncs == 1) << c.name;
      if (s.metrics_read) EXPECT_TRUE(std::isfinite(s.loss)) << c.name << ": " << s.loss;
      // (fp16's first steps may overflow at the starting scale and skip.)
      if (s.metrics_read && !s.skipped) EXPECT_GT(s.gradient_norm, 0) << c.name;
    }
    EXPECT_EQ(rig.state->step, 6) << c.name;
    const train::LastStepMetrics settled = rig.step->settle();
    EXPECT_EQ(settled.read, c.syncs == 0) << c.name;
    if (settled.read) EXPECT_TRUE(std::isfinite(settled.loss)) << c.name;
  }
}

// World size 1 through c10d's NCCL group and the real reducer: NCCL's sum
// over one rank is the identity, so the reduced gradients equal plain
// backward's.
TEST_F(Gpu, NcclReducerAtWorldSizeOneLeavesPlainGradients) {
  if (!dist::nccl_built()) GTEST_SKIP() << "this build has no c10d NCCL";
  const torch::Device dev(torch::kCUDA, 0);
  torch::manual_seed(1);
  auto w1 = torch::randn({64, 32}, torch::TensorOptions().device(dev)).requires_grad_();
  auto w2 = torch::randn({32, 10}, torch::TensorOptions().device(dev)).requires_grad_();
  auto x = torch::randn({16, 64}, torch::TensorOptions().device(dev));
  auto loss_of = [&] { return x.mm(w1).relu().mm(w2).pow(2).mean(); };
  loss_of().backward();
  const auto g1 = w1.grad().clone();
  const auto g2 = w2.grad().clone();
  w1.mutable_grad() = torch::Tensor();
  w2.mutable_grad() = torch::Tensor();

  dist::testing::MemoryStore store(std::chrono::seconds(30));
  dist::CommunicatorOptions o;
  o.cuda_device = 0;
  o.timeout = std::chrono::seconds(30);
  auto comm = dist::connect_nccl(c10::make_intrusive<dist::StoreAdapter>(store), o);
  EXPECT_EQ(comm->backend(), "NCCL");
  // Small buckets: several all-reduces, some started during backward.
  dist::GradientReducer reducer(*comm, {w1, w2}, /*bucket_cap_bytes=*/1024);
  reducer.prepare();
  loss_of().backward();
  reducer.finish();
  EXPECT_TRUE(torch::allclose(w1.grad(), g1, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(w2.grad(), g2, 1e-6, 1e-6));

  // CPU tensors (counters) are staged through the device.
  auto metrics = torch::tensor({1.5, 2.0}, torch::kFloat64);
  comm->all_reduce_sum({metrics}, "metrics");
  EXPECT_DOUBLE_EQ(metrics[0].item<double>(), 1.5);
  comm->barrier("end");
}

// The distributed step on one GPU (NCCL at world size 1, the coordinator on
// localhost): the gradient buckets, the summed numbers and the BatchNorm
// pooling make the stream wait, never the host; the host synchronises
// only on a stop agreement (every kStopAgreementSteps steps).
TEST_F(Gpu, ADistributedStepSynchronisesOnlyOnStopAgreements) {
  if (!dist::nccl_built()) GTEST_SKIP() << "this build has no c10d NCCL";
  ::setenv("FASTNN_JOB_TOKEN", "gpu-test", 1);
  train::testing::StepRigOptions o;
  o.device = torch::Device(torch::kCUDA, 0);
  o.read_every_step = false;
  dist::ClusterSpec spec;
  spec.rank = 0;
  spec.world_size = 1;
  spec.coordinator = "127.0.0.1:" + std::to_string(dist::pick_free_port());
  o.cluster = spec;
  train::testing::StepRig rig(std::move(o));
  rig.run(0, true);  // warm-up: cuDNN, the allocator, NCCL's communicator
  for (int i = 1; i < 12; ++i) {
    int syncs = 0;
    std::string others;
    train::StepStats s;
    {
      SyncCounter counter;
      s = rig.run(i, false);
      syncs = counter.syncs;
      others = counter.others;
    }
    const bool agreement = s.global_step % train::kStopAgreementSteps == 0;
    EXPECT_EQ(syncs, agreement ? 1 : 0) << "step " << s.global_step << "; other warnings:\n"
                                        << others;
    EXPECT_EQ(s.metrics_read, agreement) << s.global_step;
  }
  EXPECT_TRUE(rig.step->settle().read);
}

}  // namespace
}  // namespace fastnn
