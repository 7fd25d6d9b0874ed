// The real binaries on a slice of Fashion-MNIST (Debian's
// dataset-fashion-mnist): convert, train, SIGKILL, resume, evaluate; resume
// equivalence; SIGTERM; command-line errors and their exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "src/train/checkpoint.h"
#include "tests/integration/process.h"
#include "tests/test_files.h"
#include "tests/test_paths.h"

namespace fastnn::testing {
namespace {
namespace fs = std::filesystem;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "integration";

class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::create_directories(kTmp);
    ASSERT_TRUE(fs::exists(fs::path(fmnist_source()) / "train-images-idx3-ubyte.gz"))
        << "Fashion-MNIST not found in " << fmnist_source()
        << " (apt-get install dataset-fashion-mnist, or set FASTNN_FMNIST_DIR)";
    auto r = convert(data_dir(), 6000, "convert.log");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ofstream cfg(config());
    cfg << "# integration test config\n"
        << "model_name=lenet\ndataset_name=fashion_mnist\n"
        << "dataset_dir=" << data_dir() << "\n"
        << "optimizer=momentum\nlearning_rate=0.01\nmomentum=0.9\n"
        << "batch_size=32\nweight_decay=0.00004\nuse_fp16=False\n"
        << "enable_paisoar=False\nlog_loss_every_n_iters=50\n"
        << "intra_op_parallelism_threads=1\nnum_preprocessing_threads=2\n"
        << "shuffle_buffer_size=2048\n";
  }
  // The first max_examples images of each split, into dir.
  static ProcessResult convert(const std::string& dir, int max_examples, const std::string& log) {
    return run(
        {kBin + "/convert_dataset", "--dataset_name", "fashion_mnist", "--input", fmnist_source(),
         "--dataset_dir", dir, "--max_examples", std::to_string(max_examples), "--overwrite"},
        (kTmp / log).string());
  }
  static std::string data_dir() { return (kTmp / "fmnist").string(); }
  static std::string config() { return (kTmp / "test.cfg").string(); }
  static std::string fresh(const std::string& name) { return cleared_dir(kTmp / name); }
  static std::vector<std::string> train_args(const std::string& dir, const std::string& stop,
                                             const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {kBin + "/train_image_classifier", "--config", config(),
                                     "--train_dir=" + dir, "--stop_at_step=" + stop};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  static int64_t indexed_step(const std::string& dir) {
    std::ifstream in(fs::path(dir) / "checkpoint");
    std::string line;
    std::getline(in, line);
    std::smatch m;
    if (std::regex_search(line, m, std::regex("model\\.ckpt-(\\d+)"))) {
      return std::stoll(m[1]);
    }
    return -1;
  }
  static Child start_and_wait_for_checkpoint(const std::string& dir, const std::string& log) {
    auto args = train_args(dir, "1000000", {"--save_checkpoints_steps=100"});
    Child c = spawn(args, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (indexed_step(dir) < 100 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return c;
  }
};

TEST_F(FashionMnist, TrainKillResumeEvaluate) {
  const auto dir = fresh("kill_resume");
  Child c = start_and_wait_for_checkpoint(dir, (kTmp / "kill1.log").string());
  ASSERT_GE(indexed_step(dir), 100) << "no checkpoint appeared";
  kill(c.pid, SIGKILL);
  auto killed = wait_for(c);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  const int64_t saved = indexed_step(dir);
  ASSERT_GE(saved, 100);
  ASSERT_LT(saved, 500) << "trained past the planned stop before the kill";

  auto r = run(train_args(dir, "500"), (kTmp / "kill2.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Restored"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(global_step " + std::to_string(saved) + ")"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("samples/sec]"), std::string::npos) << r.output;
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["final_step"], 500);
  EXPECT_EQ(metrics["steps_this_run"], 500 - saved);
  EXPECT_EQ(metrics["exit_status"], 0);
  EXPECT_TRUE(fs::exists(fs::path(dir) / "config.cfg"));

  auto e = run({kBin + "/eval_image_classifier", "--config", config(), "--checkpoint_path=" + dir},
               (kTmp / "eval.log").string());
  ASSERT_EQ(e.exit_code, 0) << e.output;
  // TF-slim's eval evaluates --dataset_split_name (not the test split
  // whatever it says); a size lenet cannot take is exit 2 (not ignored).
  auto on_train = run({kBin + "/eval_image_classifier", "--config", config(),
                       "--checkpoint_path=" + dir, "--dataset_split_name=train"},
                      (kTmp / "eval_train.log").string());
  EXPECT_EQ(on_train.exit_code, 0) << on_train.output;
  EXPECT_NE(on_train.output.find("eval train: "), std::string::npos) << on_train.output;
  // TF-slim's eval flags: at most max_num_batches batches; summaries in
  // eval_dir.
  const auto eval_dir = fs::path(dir) / "my_eval";
  auto some =
      run({kBin + "/eval_image_classifier", "--config", config(), "--checkpoint_path=" + dir,
           "--max_num_batches=2", "--eval_batch_size=100", "--eval_dir=" + eval_dir.string()},
          (kTmp / "eval_some.log").string());
  EXPECT_EQ(some.exit_code, 0) << some.output;
  EXPECT_NE(some.output.find(": 200 samples, global_step 500"), std::string::npos) << some.output;
  EXPECT_TRUE(fs::exists(eval_dir) && !fs::is_empty(eval_dir)) << eval_dir;
  auto bad_size = run({kBin + "/eval_image_classifier", "--config", config(),
                       "--checkpoint_path=" + dir, "--eval_image_size=32"},
                      (kTmp / "eval_size.log").string());
  EXPECT_EQ(bad_size.exit_code, 2) << bad_size.output;
  EXPECT_NE(bad_size.output.find("eval_image_size: 32: lenet takes 28x28 images only"),
            std::string::npos)
      << bad_size.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(e.output, m, std::regex("eval_result (\\{.*\\})"))) << e.output;
  auto j = nlohmann::json::parse(m[1].str());
  EXPECT_EQ(j["samples"], 6000);
  EXPECT_EQ(j["global_step"], 500);
  EXPECT_GT(j["accuracy"].get<double>(), 0.65) << e.output;  // chance is 0.1
  EXPECT_GE(j["recall_5"].get<double>(), j["accuracy"].get<double>());
  // Per-class counts add up to the totals.
  int64_t correct = 0, total = 0;
  for (size_t c = 0; c < 10; ++c) {
    correct += j["class_correct"][c].get<int64_t>();
    total += j["class_total"][c].get<int64_t>();
  }
  EXPECT_EQ(total, 6000);
  EXPECT_EQ(correct, j["top1_correct"].get<int64_t>());
  EXPECT_NE(e.output.find("class 1 Trouser"), std::string::npos) << e.output;
}

TEST_F(FashionMnist, ResumedRunEndsBitForBitLikeAnUninterruptedOne) {
  const auto a = fresh("equiv_a"), b = fresh("equiv_b");
  ASSERT_EQ(run(train_args(a, "60"), (kTmp / "equiv_a.log").string()).exit_code, 0);
  ASSERT_EQ(run(train_args(b, "30"), (kTmp / "equiv_b1.log").string()).exit_code, 0);
  auto resumed = run(train_args(b, "60"), (kTmp / "equiv_b2.log").string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_NE(resumed.output.find("(global_step 30)"), std::string::npos);
  auto ta = train::load_tensors((fs::path(a) / "model.ckpt-60").string());
  auto tb = train::load_tensors((fs::path(b) / "model.ckpt-60").string());
  ASSERT_EQ(ta.size(), tb.size());
  int slots = 0;
  for (const auto& [name, t] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, tb[name])) << name;
    if (name.rfind("optimizer/", 0) == 0) ++slots;
  }
  EXPECT_EQ(slots, 8);  // one Momentum slot per LeNet variable
}

// gradient_accumulation_steps=3: checkpoints count optimizer steps and a
// resumed run takes up the input at the next micro-batch: the same bits.
TEST_F(FashionMnist, AccumulatedRunResumesBitForBit) {
  const auto a = fresh("accum_a"), b = fresh("accum_b");
  auto args = [&](const std::string& dir, const std::string& stop) {
    return train_args(dir, stop, {"--gradient_accumulation_steps=3", "--batch_size=16"});
  };
  ASSERT_EQ(run(args(a, "20"), (kTmp / "accum_a.log").string()).exit_code, 0);
  ASSERT_EQ(run(args(b, "10"), (kTmp / "accum_b1.log").string()).exit_code, 0);
  auto resumed = run(args(b, "20"), (kTmp / "accum_b2.log").string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_NE(resumed.output.find("(global_step 10)"), std::string::npos) << resumed.output;
  auto ta = train::load_tensors((fs::path(a) / "model.ckpt-20").string());
  auto tb = train::load_tensors((fs::path(b) / "model.ckpt-20").string());
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, tb[name])) << name;
  }
  // 20 steps of 3 micro-batches: the input advanced by 60 batches.
  ASSERT_TRUE(ta.count("input/batches_consumed"));
  EXPECT_EQ(ta.at("input/batches_consumed").item<int64_t>(), 60);
}

// datasets_use_caching keeps the decoded images; the second
// epoch preprocesses them with the same draws, so the run ends bit for bit
// like one that decodes every epoch.
// On a 640-image slice of its own (converted here, quickly), so that two runs of
// over two epochs each take seconds, not the suite's 6,000 images twice.
TEST_F(FashionMnist, DecodedCacheTrainsBitForBitLikeDecodingEveryEpoch) {
  const auto small = fresh("fmnist_640"), cached = fresh("cache_on"), plain = fresh("cache_off");
  auto c = convert(small, 640, "convert_640.log");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  auto args = [&](const std::string& dir, bool cache) {
    auto v = train_args(dir, "45");  // 640 images of 32: 20 steps an epoch, 2.25 epochs
    v.push_back("--dataset_dir=" + small);
    v.push_back("--augment_policy=trivialaugment");
    v.push_back(std::string("--datasets_use_caching=") + (cache ? "True" : "False"));
    return v;
  };
  const auto on = run(args(cached, true), (kTmp / "cache_on.log").string());
  ASSERT_EQ(on.exit_code, 0) << on.output;
  EXPECT_NE(on.output.find("Input cache (datasets_use_caching): the decoded images of 640 "
                           "records, about "),
            std::string::npos)
      << on.output;
  ASSERT_EQ(run(args(plain, false), (kTmp / "cache_off.log").string()).exit_code, 0);
  auto ta = train::load_tensors((fs::path(cached) / "model.ckpt-45").string());
  auto tb = train::load_tensors((fs::path(plain) / "model.ckpt-45").string());
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, tb[name])) << name;
  }
}

// The policy's and random erasing's draws come from the
// per-example generators, mixup's from (seed, rank, batch number), so a
// resumed run still ends bit for bit like an uninterrupted one; and they
// do change the training.
TEST_F(FashionMnist, ResumedRunWithAugmentationAndMixupEndsBitForBit) {
  const std::vector<std::string> extra = {"--augment_policy=trivialaugment",
                                          "--random_erasing_prob=0.25", "--mixup_alpha=0.2",
                                          "--cutmix_alpha=1.0", "--label_smoothing=0.1"};
  auto args = [&](const std::string& dir, const std::string& stop, bool augmented) {
    auto a = train_args(dir, stop);
    if (augmented) a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto a = fresh("aug_a"), b = fresh("aug_b"), plain = fresh("aug_plain");
  ASSERT_EQ(run(args(a, "40", true), (kTmp / "aug_a.log").string()).exit_code, 0);
  ASSERT_EQ(run(args(b, "20", true), (kTmp / "aug_b1.log").string()).exit_code, 0);
  auto resumed = run(args(b, "40", true), (kTmp / "aug_b2.log").string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_NE(resumed.output.find("(global_step 20)"), std::string::npos);
  ASSERT_EQ(run(args(plain, "40", false), (kTmp / "aug_plain.log").string()).exit_code, 0);
  auto ta = train::load_tensors((fs::path(a) / "model.ckpt-40").string());
  auto tb = train::load_tensors((fs::path(b) / "model.ckpt-40").string());
  auto tp = train::load_tensors((fs::path(plain) / "model.ckpt-40").string());
  ASSERT_EQ(ta.size(), tb.size());
  int differs_from_plain = 0;
  for (const auto& [name, t] : ta) {
    ASSERT_TRUE(tb.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, tb[name])) << name;
    if (tp.count(name) && t.is_floating_point() && !torch::equal(t, tp[name])) {
      ++differs_from_plain;
    }
  }
  EXPECT_GT(differs_from_plain, 0);
}

TEST_F(FashionMnist, SigtermWritesACheckpointAndExits143) {
  const auto dir = fresh("sigterm");
  Child c = start_and_wait_for_checkpoint(dir, (kTmp / "sigterm.log").string());
  ASSERT_GE(indexed_step(dir), 100);
  kill(c.pid, SIGTERM);
  auto r = wait_for(c);
  EXPECT_EQ(r.exit_code, 143) << r.output;
  EXPECT_NE(r.output.find("received SIGTERM"), std::string::npos) << r.output;
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["exit_status"], 143);
  EXPECT_EQ(indexed_step(dir), metrics["final_step"].get<int64_t>());
}

// A stop signal inside a long accumulated step ends the run within
// seconds (not only after the whole step, which can take many minutes), with
// the last full step's checkpoint and the step's micro-batches not applied.
TEST_F(FashionMnist, SigtermInsideAnAccumulatedStepStopsBetweenMicroBatches) {
  const auto dir = fresh("sigterm_accumulating");
  ASSERT_EQ(run(train_args(dir, "5"), (kTmp / "sigterm_acc1.log").string()).exit_code, 0);
  const std::string log = (kTmp / "sigterm_acc2.log").string();
  Child c = spawn(train_args(dir, "1000000", {"--gradient_accumulation_steps=1000000"}), log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto restored = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {}).find("Restored") !=
           std::string::npos;
  };
  while (!restored() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(c.pid, SIGTERM);
  auto r = wait_for(c, 60);
  EXPECT_EQ(r.exit_code, 143) << r.output;
  EXPECT_NE(r.output.find("received SIGTERM"), std::string::npos) << r.output;
  EXPECT_EQ(indexed_step(dir), 5);
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["final_step"], 5);
  EXPECT_EQ(metrics["exit_status"], 143);
}

// Settings that change nothing in this run are said, as stop_at_step
// without StopAtStepHook is.
TEST_F(FashionMnist, SettingsThatDoNothingAreSaid) {
  const auto r = run({kBin + "/train_image_classifier", "--config", config(), "--dry_run",
                      "--stop_at_step=5", "--warmup_steps=100", "--randaugment_num_ops=3"},
                     (kTmp / "do_nothing.log").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("randaugment_num_ops does nothing: augment_policy=none"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the warmup (100 steps) is longer than the run (5 steps)"),
            std::string::npos)
      << r.output;
}

TEST_F(FashionMnist, ConfigErrorsExitTwoBeforeAnyWork) {
  const auto dir = fresh("errors");
  auto bad_value = run({kBin + "/train_image_classifier", "--config", config(),
                        "--train_dir=" + dir, "--learning_rate=abc"},
                       (kTmp / "err1.log").string());
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_NE(bad_value.output.find("learning_rate"), std::string::npos);
  EXPECT_NE(bad_value.output.find("abc"), std::string::npos);
  auto typo = run({kBin + "/train_image_classifier", "--config", config(), "--train_dir=" + dir,
                   "--learing_rate=0.1"},
                  (kTmp / "err2.log").string());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("did you mean 'learning_rate'"), std::string::npos) << typo.output;
  auto bad_model = run({kBin + "/train_image_classifier", "--config", config(),
                        "--train_dir=" + dir, "--model_name=lenet9"},
                       (kTmp / "err3.log").string());
  EXPECT_EQ(bad_model.exit_code, 2);
  EXPECT_NE(bad_model.output.find("lenet9"), std::string::npos);
  auto bad_policy = run({kBin + "/train_image_classifier", "--config", config(),
                         "--train_dir=" + dir, "--augment_policy=autoaugment_svhn"},
                        (kTmp / "err5.log").string());
  EXPECT_EQ(bad_policy.exit_code, 2);
  EXPECT_NE(bad_policy.output.find("augment_policy"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::path(dir) / "config.cfg")) << "work started";
  auto no_data = run({kBin + "/train_image_classifier", "--config", config(), "--train_dir=" + dir,
                      "--dataset_dir=" + dir + "/none"},
                     (kTmp / "err4.log").string());
  EXPECT_EQ(no_data.exit_code, 3) << no_data.output;
}

TEST_F(FashionMnist, AliasRunsWithAWarningAndDryRunDescribesTheModel) {
  const auto cfg = (kTmp / "alias.cfg").string();
  std::ofstream(cfg) << "enable_paisora=True\nmodel_name=lenet\n"
                     << "dataset_name=fashion_mnist\ndataset_dir=" << data_dir() << "\n";
  auto r = run({kBin + "/train_image_classifier", "--config", cfg, "--dry_run"},
               (kTmp / "alias.log").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("enable_paisoar"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3274634 parameters"), std::string::npos) << r.output;
  auto cluster =
      run({kBin + "/train_image_classifier", "--config", cfg, "--print_cluster", "--task_index=0"},
          (kTmp / "cluster.log").string());
  EXPECT_EQ(cluster.exit_code, 0) << cluster.output;
  EXPECT_NE(cluster.output.find("world_size = 1  (default: no cluster source)"), std::string::npos)
      << cluster.output;
  EXPECT_NE(cluster.output.find("rank = 0 (chief)  (task_index (command line))"), std::string::npos)
      << cluster.output;
  EXPECT_NE(cluster.output.find("mode = single process"), std::string::npos) << cluster.output;
  const auto dir = fresh("alias_run");
  auto trained = run(
      {kBin + "/train_image_classifier", "--config", cfg, "--train_dir=" + dir, "--stop_at_step=5"},
      (kTmp / "alias_run.log").string());
  EXPECT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("'enable_paisora' is an alias of 'enable_paisoar'"),
            std::string::npos)
      << trained.output;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-5"));
}

TEST_F(FashionMnist, FineTuneIntoMoreClassesWithExcludedScopes) {
  const auto src = fresh("ft_source");
  ASSERT_EQ(run(train_args(src, "60"), (kTmp / "ft_src.log").string()).exit_code, 0);
  auto ft_args = [&](const std::string& dir) {
    return train_args(dir, "20", {"--checkpoint_path=" + src, "--num_classes=12"});
  };
  const auto bad = fresh("ft_mismatch");
  auto mismatch = run(ft_args(bad), (kTmp / "ft_bad.log").string());
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.output;
  EXPECT_NE(mismatch.output.find("shape mismatch: LeNet/fc4/weights"), std::string::npos)
      << mismatch.output;
  EXPECT_NE(mismatch.output.find("checkpoint_exclude_scopes"), std::string::npos);

  const auto dir = fresh("ft_ok");
  auto args = ft_args(dir);
  args.push_back("--checkpoint_exclude_scopes=LeNet/fc4");
  args.push_back("--trainable_scopes=LeNet/fc4");
  auto r = run(args, (kTmp / "ft_ok.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Initialized 6 variables"), std::string::npos) << r.output;
  auto before = train::load_tensors((fs::path(src) / "model.ckpt-60").string());
  auto after = train::load_tensors((fs::path(dir) / "model.ckpt-20").string());
  // Restored and frozen (outside trainable_scopes): unchanged.
  EXPECT_TRUE(
      torch::equal(before["model/LeNet/conv1/weights"], after["model/LeNet/conv1/weights"]));
  EXPECT_TRUE(torch::equal(before["model/LeNet/fc3/weights"], after["model/LeNet/fc3/weights"]));
  EXPECT_EQ(after["model/LeNet/fc4/weights"].size(0), 12);
  EXPECT_EQ(after.count("optimizer/LeNet/conv1/weights/Momentum"), 0u);
  EXPECT_EQ(after["global_step"].item<int64_t>(), 20);

  // A train_dir with a checkpoint wins over the fine-tuning source.
  auto again = run(args, (kTmp / "ft_again.log").string());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("fine-tuning source is not used"), std::string::npos) << again.output;
}

// A fine-tune that restores nothing, and an exclusion matching nothing (a
// typo), are usage errors as a trainable_scopes typo is (not exit 0 and a
// run from scratch). Nothing is written to the train_dir.
TEST_F(FashionMnist, AFineTuneThatRestoresNothingIsExit2) {
  const auto src = fresh("ft_nothing_source");
  ASSERT_EQ(run(train_args(src, "5"), (kTmp / "ft_nothing_src.log").string()).exit_code, 0);
  int round = 0;
  for (const auto& [flag, said] :
       {std::pair<std::string, std::string>{"--checkpoint_exclude_scopes=LeNet",
                                            "excludes them all"},
        {"--checkpoint_exclude_scopes=LeNet/fc_4", "'LeNet/fc_4' matches no variable of LeNet"}}) {
    const auto dir = fresh("ft_nothing_" + std::to_string(round++));
    auto r = run(train_args(dir, "5", {"--checkpoint_path=" + src, flag}),
                 (kTmp / "ft_nothing.log").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(said), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-5"));
  }
}

TEST_F(FashionMnist, EvaluatesDuringTraining) {
  const auto dir = fresh("periodic_eval");
  auto args = train_args(dir, "50", {"--eval_every_n_iters=20"});
  auto r = run(args, (kTmp / "periodic.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* step : {"global_step 20:", "global_step 40:", "global_step 50:"}) {
    EXPECT_NE(r.output.find(std::string("eval test at ") + step), std::string::npos) << step << "\n"
                                                                                     << r.output;
  }
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  EXPECT_GT(metrics["eval_accuracy"].get<double>(), 0.3);
}

TEST_F(FashionMnist, ResultFormatsReportHeldOutValidationBesideTest) {
  const auto dir = fresh("result_smac");
  auto args =
      train_args(dir, "30", {"--validation_fraction=0.1", "--result_format=smac", "--seed=5"});
  auto r = run(args, (kTmp / "result_smac.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  // Validation is about a tenth of the 6,000 training records; test is the
  // test file, untouched.
  const int64_t held = metrics["validation_samples"].get<int64_t>();
  EXPECT_GT(held, 500);
  EXPECT_LT(held, 700);
  EXPECT_EQ(metrics["test_samples"], 6000);
  EXPECT_EQ(metrics["eval_accuracy"], metrics["test_accuracy"]);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m,
      std::regex("\nResult of this algorithm run: SAT, ([0-9.]+), 30, ([0-9.]+), 5\n")))
      << r.output;
  EXPECT_NEAR(std::stod(m[2].str()), 1 - metrics["validation_accuracy"].get<double>(), 1e-6);
  EXPECT_GT(std::stod(m[1].str()), 0);

  // TSV: one name<TAB>value a line, the same numbers as metrics.json.
  const auto tsv_dir = fresh("result_tsv");
  args = train_args(tsv_dir, "30", {"--validation_fraction=0.1", "--result_format=tsv"});
  r = run(args, (kTmp / "result_tsv.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> rows;
  std::istringstream lines(r.output);
  for (std::string l; std::getline(lines, l);) {
    const auto tab = l.find('\t');
    if (tab != std::string::npos) rows[l.substr(0, tab)] = l.substr(tab + 1);
  }
  EXPECT_EQ(rows["status"], "ok");
  EXPECT_EQ(rows["exit_code"], "0");
  EXPECT_EQ(rows["final_step"], "30");
  EXPECT_EQ(rows["validation_samples"], std::to_string(held));
  EXPECT_EQ(rows["test_samples"], "6000");
  std::ifstream(fs::path(tsv_dir) / "metrics.json") >> metrics;
  EXPECT_NEAR(std::stod(rows["validation_accuracy"]), metrics["validation_accuracy"].get<double>(),
              1e-5);
  EXPECT_NEAR(std::stod(rows["test_loss"]), metrics["test_loss"].get<double>(), 1e-5);
}

TEST_F(FashionMnist, ResultFormatsSayUnsatForDivergedAndFailedRuns) {
  // Diverged at step 3 (an injected infinite gradient, static loss scale).
  const auto dir = fresh("result_unsat");
  auto args = train_args(
      dir, "20", {"--validation_fraction=0.1", "--result_format=smac", "--loss_scaling=static"});
  setenv("FASTNN_FAILPOINTS", "inf_grad_steps=3", 1);
  auto r = run(args, (kTmp / "result_unsat.log").string());
  unsetenv("FASTNN_FAILPOINTS");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("Result of this algorithm run: UNSAT, [0-9.]+, 4, 1.000000, 0\n")))
      << r.output;
  // A data error before training: UNSAT too, and exit 3.
  args = train_args(fresh("result_nodata"), "20",
                    {"--validation_fraction=0.1", "--result_format=tsv",
                     "--dataset_dir=" + (kTmp / "no_such_data").string()});
  r = run(args, (kTmp / "result_nodata.log").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("status\tfailed\nexit_code\t3\n"), std::string::npos) << r.output;
  // SMAC's quality needs a validation split: without one, exit 2 before
  // any work, saying how to get one.
  args = train_args(fresh("result_noval"), "20", {"--result_format=smac"});
  r = run(args, (kTmp / "result_noval.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("set validation_fraction"), std::string::npos) << r.output;
}

TEST_F(FashionMnist, MovingAveragesAreSavedAndUsedByEvaluation) {
  const auto dir = fresh("ema");
  auto args = train_args(dir, "50", {"--moving_average_decay=0.99", "--result_format=tsv"});
  auto t = run(args, (kTmp / "ema.log").string());
  ASSERT_EQ(t.exit_code, 0) << t.output;
  // The end-of-run evaluation evaluated the averages too: the same
  // accuracy eval_image_classifier finds in the checkpoint, below.
  EXPECT_NE(t.output.find("eval test at global_step 50: "), std::string::npos) << t.output;
  EXPECT_NE(t.output.find(", moving averages)"), std::string::npos) << t.output;
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  auto ckpt = train::load_tensors((fs::path(dir) / "model.ckpt-50").string());
  const std::string w = "model/LeNet/fc4/weights";
  ASSERT_TRUE(ckpt.count(w + "/ExponentialMovingAverage"));
  EXPECT_FALSE(torch::equal(ckpt[w], ckpt[w + "/ExponentialMovingAverage"]));
  auto e = run({kBin + "/eval_image_classifier", "--config", config(), "--checkpoint_path=" + dir},
               (kTmp / "ema_eval.log").string());
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("moving-average weights"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("\"moving_averages\":true"), std::string::npos) << e.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(e.output, m, std::regex("eval_result (\\{.*\\})")));
  EXPECT_EQ(nlohmann::json::parse(m[1].str())["top1_correct"].get<int64_t>(),
            std::llround(metrics["test_accuracy"].get<double>() * 6000));
}

// Dynamic loss scaling: injected Inf gradients at steps 10 and 11 skip
// those updates (weights and slots unchanged), halve the scale twice, and
// training carries on; the scale is checkpointed.
TEST_F(FashionMnist, DynamicLossScalingSkipsOverflowedStepsAndRecovers) {
  const auto dir = fresh("loss_scale");
  auto args = train_args(
      dir, "16", {"--loss_scaling=dynamic", "--save_checkpoints_steps=1", "--max_to_keep=0"});
  ::setenv("FASTNN_FAILPOINTS", "inf_grad_steps=10,11", 1);
  auto r = run(args, (kTmp / "loss_scale.log").string());
  ::unsetenv("FASTNN_FAILPOINTS");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("global_step 10: Inf/NaN gradients at loss scale 32768: "
                          "update skipped, loss scale now 16384"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("global_step 11: Inf/NaN gradients at loss scale 16384: "
                          "update skipped, loss scale now 8192"),
            std::string::npos)
      << r.output;
  nlohmann::json metrics;
  std::ifstream(fs::path(dir) / "metrics.json") >> metrics;
  EXPECT_EQ(metrics["final_step"], 16);
  EXPECT_EQ(metrics["steps_skipped_overflow"], 2);
  EXPECT_EQ(metrics["loss_scale"].get<double>(), 8192.0);
  auto ckpt = [&](int step) {
    return train::load_tensors((fs::path(dir) / ("model.ckpt-" + std::to_string(step))).string());
  };
  const auto c10 = ckpt(10), c12 = ckpt(12), c13 = ckpt(13);
  const std::string w = "model/LeNet/fc4/weights";
  EXPECT_TRUE(torch::equal(c10.at(w), c12.at(w))) << "a skipped step changed weights";
  EXPECT_TRUE(torch::equal(c10.at("optimizer/" + std::string("LeNet/fc4/weights/Momentum")),
                           c12.at("optimizer/LeNet/fc4/weights/Momentum")));
  EXPECT_FALSE(torch::equal(c12.at(w), c13.at(w))) << "training did not resume";
  EXPECT_EQ(c12.at("loss_scale/scale").item<double>(), 8192.0);
  EXPECT_TRUE(torch::isfinite(c13.at(w)).all().item<bool>());
}

// Without dynamic scaling the same Inf gradients are divergence:
// NanTensorHook stops with exit 4 and names the step; no checkpoint of the
// bad state is written.
TEST_F(FashionMnist, NanTensorHookExitsFourNamingTheStep) {
  const auto dir = fresh("nan");
  auto args = train_args(
      dir, "16",
      {"--hooks=NanTensorHook,StopAtStepHook,CheckpointSaverHook", "--save_checkpoints_steps=1"});
  ::setenv("FASTNN_FAILPOINTS", "inf_grad_steps=5", 1);
  auto r = run(args, (kTmp / "nan.log").string());
  ::unsetenv("FASTNN_FAILPOINTS");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("gradient norm is inf at global_step 6"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "model.ckpt-5"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-6"));
}

// A GPU run reads its step's numbers only on the steps a hook asks for
// (here: every 10th, for the log line and the checkpoint);
// The read_on_demand failpoint makes a CPU run do the same. Same log lines,
// same checkpoint bytes; an Inf on a step that did not read stops the run
// at the next step that does, naming the first, before its checkpoint.
TEST_F(FashionMnist, StepsThatReadOnlyWhenAskedTrainAndStopTheSame) {
  auto losses = [](const std::string& output) {
    std::vector<std::string> out;
    const std::regex line(
        "loss = [^\t]*,\taccuracy = [^\t]*,\tlrate = [^\t]*,\tglobal_step = "
        "\\d+");
    for (auto it = std::sregex_iterator(output.begin(), output.end(), line);
         it != std::sregex_iterator(); ++it) {
      out.push_back(it->str());
    }
    return out;
  };
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::vector<std::string> logged[2];
  std::string dirs[2];
  for (int lazy = 0; lazy < 2; ++lazy) {
    dirs[lazy] = fresh(lazy ? "read_on_demand" : "read_every_step");
    auto args = train_args(dirs[lazy], "40",
                           {"--log_loss_every_n_iters=10", "--save_checkpoints_steps=20"});
    if (lazy) ::setenv("FASTNN_FAILPOINTS", "read_on_demand", 1);
    auto r = run(args, (kTmp / (dirs[lazy] + ".log")).string());
    ::unsetenv("FASTNN_FAILPOINTS");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    logged[lazy] = losses(r.output);
  }
  EXPECT_EQ(logged[0].size(), 4u);
  EXPECT_EQ(logged[1], logged[0]);
  int compared = 0;
  for (const auto& e : fs::directory_iterator(dirs[0])) {
    const auto name = e.path().filename().string();
    if (name.rfind("model.ckpt-40", 0) != 0) continue;
    EXPECT_EQ(bytes(e.path()), bytes(fs::path(dirs[1]) / name)) << name;
    ++compared;
  }
  EXPECT_GT(compared, 0);

  const auto dir = fresh("read_on_demand_inf");
  auto args = train_args(dir, "30", {"--log_loss_every_n_iters=10", "--save_checkpoints_steps=10"});
  ::setenv("FASTNN_FAILPOINTS", "read_on_demand;inf_grad_steps=5", 1);
  auto r = run(args, (kTmp / "read_on_demand_inf.log").string());
  ::unsetenv("FASTNN_FAILPOINTS");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("Inf/NaN at global_step 6 (seen at global_step 10,"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.ckpt-10"));
}

// TF-slim's evaluation loop: eval_image_classifier follows a train_dir,
// evaluates new checkpoints as they appear and ends when the run finishes.
TEST_F(FashionMnist, EvaluationLoopFollowsTrainingToTheEnd) {
  const auto dir = fresh("eval_loop");
  auto args = train_args(dir, "120", {"--save_checkpoints_steps=40"});
  Child trainer = spawn(args, (kTmp / "eval_loop_train.log").string());
  Child loop = spawn({kBin + "/eval_image_classifier", "--config", config(),
                      "--checkpoint_path=" + dir, "--eval_interval_secs=1"},
                     (kTmp / "eval_loop.log").string());
  auto t = wait_for(trainer, 300);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  auto e = wait_for(loop, 120);
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("global_step 120"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("the training run finished at global_step 120"), std::string::npos)
      << e.output;
  bool has_events = false;
  for (const auto& f : fs::directory_iterator(fs::path(dir) / "eval_test")) {
    has_events |= f.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  EXPECT_TRUE(has_events);
  // No new checkpoint and no finished run: eval_timeout_secs ends the loop.
  fs::remove(fs::path(dir) / "metrics.json");
  auto idle = run({kBin + "/eval_image_classifier", "--config", config(),
                   "--checkpoint_path=" + dir, "--eval_interval_secs=1", "--eval_timeout_secs=2"},
                  (kTmp / "eval_loop_idle.log").string(), 120);
  EXPECT_EQ(idle.exit_code, 0) << idle.output;
  EXPECT_NE(idle.output.find("no new checkpoint for 2 s"), std::string::npos) << idle.output;
}

// ProfilerHook: timeline-<step>.json in Chrome trace format with the
// step's phases and LibTorch's operators, the operators inside the phase
// that ran them.
TEST_F(FashionMnist, ProfilerTimelineHasPhasesAndOperators) {
  const auto dir = fresh("profile");
  auto args = train_args(dir, "4", {"--profile_every_n_iters=2"});
  ASSERT_EQ(run(args, (kTmp / "profile.log").string()).exit_code, 0);
  ASSERT_TRUE(fs::exists(fs::path(dir) / "timeline-4.json"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "timeline-3.json"));
  nlohmann::json trace;
  std::ifstream(fs::path(dir) / "timeline-2.json") >> trace;
  std::map<std::string, std::pair<double, double>> phase;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 0) {
      phase[e["name"]] = {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
    }
  }
  for (const char* p : {"input_wait", "forward", "backward", "optimizer"}) {
    ASSERT_TRUE(phase.count(p)) << p;
  }
  auto inside = [&](const nlohmann::json& e, const std::string& p) {
    const double ts = e["ts"].get<double>();
    return ts >= phase[p].first - 1 && ts + e["dur"].get<double>() <= phase[p].second + 1;
  };
  // LeNet's blocks are the CPU kernels (src/kernels/kernels.h), named in
  // the timeline: conv1 on the direct path, and conv2's block, whose forward
  // runs LibTorch's convolution and whose backward is ours (no
  // ConvolutionBackward0).
  int conv_forward = 0, conv_backward = 0, fused_forward = 0;
  int direct_backward = 0, sparse_backward = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != 1) continue;
    const std::string name = e["name"];
    if (name == "aten::conv2d" && inside(e, "forward")) ++conv_forward;
    if (name == "ConvolutionBackward0" && inside(e, "backward")) ++conv_backward;
    if (name == "fastnn::conv_relu_max_pool" && inside(e, "forward")) ++fused_forward;
    if (name.rfind("torch::autograd::CppNode<", 0) == 0 && inside(e, "backward")) {
      if (name.find("SparseConvReluMaxPool") != std::string::npos) ++sparse_backward;
      if (name.find("DirectConvReluMaxPool") != std::string::npos) ++direct_backward;
    }
  }
  EXPECT_EQ(conv_forward, 1);
  EXPECT_EQ(conv_backward, 0);
  EXPECT_EQ(fused_forward, 2);
  EXPECT_EQ(direct_backward, 1);
  EXPECT_EQ(sparse_backward, 1);
}

}  // namespace
}  // namespace fastnn::testing
