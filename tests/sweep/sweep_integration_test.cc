// Real sweeps: sweep runs train_image_classifier trials (lenet on mock
// data) two at a time, records failures, and resumes where it stopped.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/sweep/runner.h"
#include "tests/integration/process.h"
#include "tests/test_files.h"
#include "tests/test_paths.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;
using testing::run;
using testing::slurp;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "sweep";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Every trial: lenet on mock data, a few seconds.
const std::vector<std::string> kTrialArgs = {"--",
                                             "--model_name=lenet",
                                             "--dataset_name=mock",
                                             "--num_classes=10",
                                             "--batch_size=16",
                                             "--num_sample_per_epoch=100000",
                                             "--use_fp16=False",
                                             "--optimizer=sgd",
                                             "--log_loss_every_n_iters=20",
                                             "--result_format=none"};

std::vector<std::string> sweep_args(const std::vector<std::string>& own) {
  std::vector<std::string> a = {kBin + "/sweep", "--metric=train_accuracy", "--cores=2"};
  a.insert(a.end(), own.begin(), own.end());
  a.insert(a.end(), kTrialArgs.begin(), kTrialArgs.end());
  return a;
}

TEST(Sweep, CsvTrialsTwoAtATimeWithADivergingOne) {
  const fs::path out = kTmp / "csv";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "trials.csv") << "learning_rate,stop_at_step\n"
                                     << "0.05,30\n1e12,30\n0.01,30\n0.1,30\n";
  auto args = sweep_args(
      {"--trials=" + (kTmp / "trials.csv").string(), "--parallel=2", "--out=" + out.string()});
  auto r = run(args, (kTmp / "csv.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = lines(slurp(out / "results.csv"));
  ASSERT_EQ(rows.size(), 5u) << slurp(out / "results.csv");
  EXPECT_EQ(rows[0],
            "trial,status,train_accuracy,learning_rate,stop_at_step,final_step,wall_secs,"
            "exit_code,train_dir");
  // Best first; the diverged trial last, with the trainer's exit 4.
  EXPECT_NE(rows[4].find("trial-001,diverged,,1e12,30,"), std::string::npos) << rows[4];
  EXPECT_NE(rows[4].find(",4,"), std::string::npos) << rows[4];
  double previous = 2;
  for (int i = 1; i <= 3; ++i) {
    EXPECT_NE(rows[i].find(",ok,"), std::string::npos) << rows[i];
    const double metric = std::stod(rows[i].substr(rows[i].find(",ok,") + 4));
    EXPECT_LE(metric, previous) << rows[i];
    previous = metric;
    EXPECT_NE(rows[i].find(",30,"), std::string::npos) << rows[i];  // final_step
  }
  // Each trial trained in its own train_dir with its effective config.
  EXPECT_NE(slurp(out / "trial-002" / "train" / "config.cfg").find("learning_rate=0.01"),
            std::string::npos);
  // report.html: self-contained (nothing fetched), the best configuration,
  // a chart per parameter, the parallel coordinates and the best trials'
  // loss curves read from their event files.
  const std::string html = slurp(out / "report.html");
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Best configuration"), std::string::npos);
  {
    // rows[1] = trial,status,metric,learning_rate,...: the best row's rate.
    std::vector<std::string> cells;
    std::stringstream row(rows[1]);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    ASSERT_GE(cells.size(), 5u);
    EXPECT_NE(html.find("learning_rate=" + cells[3] + "\nstop_at_step=30"), std::string::npos)
        << html;
  }
  EXPECT_NE(html.find("train_accuracy against learning_rate"), std::string::npos);
  EXPECT_NE(html.find("parallel coordinates"), std::string::npos);
  EXPECT_NE(html.find("loss of the best trials"), std::string::npos);
  EXPECT_EQ(html.find("no loss summaries"), std::string::npos);
  EXPECT_NE(html.find("class='st-diverged'>diverged"), std::string::npos);
  // The same sweep again: nothing left to run, nothing rewritten.
  const auto before = fs::last_write_time(out / "trial-000" / "result.json");
  r = run(args, (kTmp / "csv_again.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 done earlier, 0 to run"), std::string::npos) << r.output;
  EXPECT_EQ(fs::last_write_time(out / "trial-000" / "result.json"), before);
  EXPECT_EQ(lines(slurp(out / "results.csv")), rows);
}

TEST(Sweep, AKilledSweepRerunRunsOnlyWhatIsMissing) {
  const fs::path out = kTmp / "killed";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "space.pcs") << "learning_rate real [0.001, 0.1] log\n"
                                    << "stop_at_step integer [50, 75]\n";
  auto args = sweep_args({"--space=" + (kTmp / "space.pcs").string(), "--num_trials=6", "--seed=3",
                          "--parallel=1", "--out=" + out.string()});
  testing::Child c = testing::spawn(args, (kTmp / "killed.log").string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!fs::exists(out / "trial-001" / "result.json") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(fs::exists(out / "trial-001" / "result.json"));
  kill(c.pid, SIGKILL);
  testing::wait_for(c, 60);
  int finished = 0;
  for (int i = 0; i < 6; ++i) finished += fs::exists(out / sweep::trial_name(i) / "result.json");
  ASSERT_GE(finished, 2);
  ASSERT_LT(finished, 6);
  auto r = run(args, (kTmp / "killed_again.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(finished) + " done earlier, " +
                          std::to_string(6 - finished) + " to run"),
            std::string::npos)
      << r.output;
  const auto rows = lines(slurp(out / "results.csv"));
  EXPECT_EQ(rows.size(), 7u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_NE(rows[i].find(",ok,"), std::string::npos);
}

// A setup every trial would fail on (a missing or invalid base
// config, an unknown key in the space, the trials or the arguments after
// --, a value out of its key's range) is exit 2 before any trial starts,
// naming what is wrong.
TEST(Sweep, ABadSetupIsExitTwoBeforeAnyTrial) {
  fs::create_directories(kTmp);
  const std::string csv = (kTmp / "setup.csv").string();
  std::ofstream(csv) << "learning_rate,stop_at_step\n0.05,5\n0.01,5\n";
  std::ofstream(kTmp / "setup_bad.cfg") << "model_name=lenet\nlearnig_rate=0.1\n";
  std::ofstream(kTmp / "setup_typo.pcs") << "learnig_rate real [0.001, 0.1]\n";
  std::ofstream(kTmp / "setup_typo.csv") << "learning_rate,batch_sise\n0.1,8\n";
  std::ofstream(kTmp / "setup_range.csv") << "learning_rate,batch_size\n0.1,8\n0.1,0\n";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--trials=" + csv, "--config=" + (kTmp / "no_such.cfg").string()}, "no_such.cfg"},
      {{"--trials=" + csv, "--config=" + (kTmp / "setup_bad.cfg").string()},
       "setup_bad.cfg:2: unknown key 'learnig_rate'"},
      {{"--space=" + (kTmp / "setup_typo.pcs").string()},
       "setup_typo.pcs: 'learnig_rate' is not a hyperparameter key; did you mean "
       "'learning_rate'?"},
      {{"--trials=" + (kTmp / "setup_typo.csv").string()},
       "setup_typo.csv: 'batch_sise' is not a hyperparameter key; did you mean 'batch_size'?"},
      {{"--trials=" + (kTmp / "setup_range.csv").string()}, "trial-001"},
      {{"--trials=" + csv, "--", "--momentun=0.9"}, "did you mean 'momentum'?"},
      {{"--trials=" + csv, "--", "--help"}, "--help"},
  };
  for (const auto& c : cases) {
    const fs::path out = kTmp / "setup";
    fs::remove_all(out);
    auto args = sweep_args({"--out=" + out.string()});
    args.insert(args.begin() + 1, c.args.begin(),
                std::find(c.args.begin(), c.args.end(), std::string("--")));
    for (auto it = std::find(c.args.begin(), c.args.end(), std::string("--")); it != c.args.end();
         ++it) {
      if (*it != "--") args.push_back(*it);
    }
    const auto r = run(args, (kTmp / "setup.log").string());
    EXPECT_EQ(r.exit_code, 2) << c.says << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out / "trial-000")) << c.says << ": a trial ran";
  }
}

// Files saved by Excel start with a byte-order mark and end lines in CRLF.
TEST(Sweep, TrialsCsvWithAByteOrderMarkRuns) {
  const fs::path out = kTmp / "bom";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "bom.csv") << "\xEF\xBB\xBFlearning_rate,stop_at_step\r\n0.05,5\r\n";
  const auto r =
      run(sweep_args({"--trials=" + (kTmp / "bom.csv").string(), "--out=" + out.string()}),
          (kTmp / "bom.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = lines(slurp(out / "results.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rfind("trial,status,train_accuracy,learning_rate,stop_at_step,", 0), 0u)
      << rows[0];
  EXPECT_EQ(rows[1].rfind("trial-000,ok,", 0), 0u) << rows[1];
}

// A sweep where no trial produced a result does not exit 0: the
// trials' shared code (4: all diverged; 2: all refused their setup), or 2
// when --metric is in no trial's metrics.json.
TEST(Sweep, NoTrialWithAResultIsNotSuccess) {
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "diverge.csv") << "learning_rate,stop_at_step\n1e12,30\n1e13,30\n";
  std::ofstream(kTmp / "fine.csv") << "learning_rate,stop_at_step\n0.05,5\n0.01,5\n";
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--trials=" + (kTmp / "diverge.csv").string()}, 4, "no trial produced a result"},
      {{"--trials=" + (kTmp / "fine.csv").string(), "--", "--model_name=no_such_net"},
       2,
       "no trial produced a result"},
      {{"--trials=" + (kTmp / "fine.csv").string(), "--metric=no_such_field"},
       2,
       "'no_such_field'"},
  };
  for (const auto& c : cases) {
    const fs::path out = kTmp / "noresult";
    fs::remove_all(out);
    std::vector<std::string> own = {"--parallel=2", "--out=" + out.string()};
    auto dashes = std::find(c.args.begin(), c.args.end(), std::string("--"));
    own.insert(own.end(), c.args.begin(), dashes);
    auto args = sweep_args(own);
    if (std::count_if(args.begin(), args.end(),
                      [](const std::string& a) { return a.rfind("--metric=", 0) == 0; }) > 1) {
      args.erase(std::find(args.begin(), args.end(), "--metric=train_accuracy"));
    }
    if (dashes != c.args.end()) args.insert(args.end(), dashes + 1, c.args.end());
    const auto r = run(args, (kTmp / "noresult.log").string());
    EXPECT_EQ(r.exit_code, c.code) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(out / "results.csv"));
  }
}

// The launcher template's every {cmd} is the trial's command.
TEST(Sweep, LauncherReplacesEveryCmd) {
  const fs::path out = kTmp / "launcher";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "launcher.csv") << "learning_rate,stop_at_step\n0.05,5\n";
  const fs::path seen = kTmp / "launched.txt";
  fs::remove(seen);
  const auto r =
      run(sweep_args({"--trials=" + (kTmp / "launcher.csv").string(), "--out=" + out.string(),
                      "--launcher=echo {cmd} > '" + seen.string() + "' && {cmd}"}),
          (kTmp / "launcher.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines(slurp(out / "results.csv")).at(1).rfind("trial-000,ok,", 0), 0u);
  const std::string launched = slurp(seen);
  EXPECT_NE(launched.find(kBin + "/train_image_classifier "), std::string::npos) << launched;
  EXPECT_EQ(launched.find("{cmd}"), std::string::npos) << launched;
}

// A rerun with other arguments after -- (another stop_at_step)
// would mix budgets in results.csv: it is refused, naming the difference.
TEST(Sweep, ARerunWithOtherTrialArgumentsIsRefused) {
  const fs::path out = kTmp / "rerun_args";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "rerun_args.csv") << "learning_rate\n0.05\n";
  auto with_budget = [&](const std::string& steps) {
    auto a =
        sweep_args({"--trials=" + (kTmp / "rerun_args.csv").string(), "--out=" + out.string()});
    a.push_back("--stop_at_step=" + steps);
    return a;
  };
  auto r = run(with_budget("5"), (kTmp / "rerun_args.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = slurp(out / "results.csv");
  r = run(with_budget("8"), (kTmp / "rerun_args_again.log").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--stop_at_step=5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--stop_at_step=8"), std::string::npos) << r.output;
  EXPECT_EQ(slurp(out / "results.csv"), csv);
  r = run(with_budget("5"), (kTmp / "rerun_args_same.log").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 done earlier, 0 to run"), std::string::npos) << r.output;
}

std::string json_value(const fs::path& file, const std::string& key) {
  const std::string text = slurp(file);
  const size_t at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 3;
  while (start < text.size() && text[start] == ' ') ++start;
  return text.substr(start, text.find_first_of(",\n}", start) - start);
}

// The trials of `out` (0..n-1) that have a result for the rung of `steps`.
std::vector<int> trials_at(const fs::path& out, int n, int steps) {
  std::vector<int> at;
  for (int i = 0; i < n; ++i) {
    if (fs::exists(out / sweep::trial_name(i) / ("result-" + std::to_string(steps) + ".json"))) {
      at.push_back(i);
    }
  }
  return at;
}

TEST(Sweep, SuccessiveHalvingPromotesByResumingCheckpoints) {
  const fs::path out = kTmp / "halving";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "halving.csv") << "learning_rate\n0.05\n0.01\n0.1\n0.002\n";
  auto args = sweep_args({"--trials=" + (kTmp / "halving.csv").string(), "--parallel=2",
                          "--min_steps=10", "--max_steps=40", "--eta=2", "--out=" + out.string()});
  auto r = run(args, (kTmp / "halving.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Rungs 10, 20, 40: 4 trials, then the best 2, then the best 1.
  const std::vector<int> at10 = trials_at(out, 4, 10), at20 = trials_at(out, 4, 20),
                         at40 = trials_at(out, 4, 40);
  ASSERT_EQ(at10.size(), 4u);
  ASSERT_EQ(at20.size(), 2u);
  ASSERT_EQ(at40.size(), 1u);
  EXPECT_NE(std::find(at20.begin(), at20.end(), at40[0]), at20.end());
  // The promoted trials were the best at rung 10.
  auto metric_at = [&](int i, int steps) {
    return std::stod(json_value(
        out / sweep::trial_name(i) / ("result-" + std::to_string(steps) + ".json"), "value"));
  };
  for (int i : at10) {
    if (std::find(at20.begin(), at20.end(), i) != at20.end()) continue;
    for (int p : at20) EXPECT_GE(metric_at(p, 10), metric_at(i, 10)) << p << " vs " << i;
  }
  // Each promotion resumed the trial's own checkpoint, and its step count
  // is the rung's.
  const fs::path best = out / sweep::trial_name(at40[0]);
  const std::string log = slurp(best / "log.txt");
  EXPECT_NE(log.find("(global_step 10)"), std::string::npos) << log;
  EXPECT_NE(log.find("(global_step 20)"), std::string::npos) << log;
  EXPECT_EQ(json_value(best / "result-10.json", "final_step"), "10");
  EXPECT_EQ(json_value(best / "result-20.json", "final_step"), "20");
  EXPECT_EQ(json_value(best / "result-40.json", "final_step"), "40");
  const auto rows = lines(slurp(out / "results.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_NE(rows[1].find(sweep::trial_name(at40[0]) + ",ok,"), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find(",40,"), std::string::npos) << rows[1];
  // Again: every rung is complete, nothing runs.
  r = run(args, (kTmp / "halving_again.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rung of 40 steps: 1 trials, 1 done earlier, 0 to run"),
            std::string::npos)
      << r.output;
}

TEST(Sweep, AshaPromotesWithoutWaitingAndResumesCheckpoints) {
  const fs::path out = kTmp / "asha";
  fs::remove_all(out);
  fs::create_directories(kTmp);
  std::ofstream(kTmp / "asha.csv") << "learning_rate\n0.05\n0.01\n0.1\n0.002\n";
  auto args =
      sweep_args({"--trials=" + (kTmp / "asha.csv").string(), "--parallel=2", "--min_steps=10",
                  "--max_steps=40", "--eta=2", "--asha", "--out=" + out.string()});
  auto r = run(args, (kTmp / "asha.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<int> at10 = trials_at(out, 4, 10), at20 = trials_at(out, 4, 20),
                         at40 = trials_at(out, 4, 40);
  // Every trial ran the first rung; promotions went up one rung at a time
  // (a trial at 40 was at 20), at least the final best 1/eta of each rung.
  ASSERT_EQ(at10.size(), 4u);
  EXPECT_GE(at20.size(), 2u);
  ASSERT_GE(at40.size(), 1u);
  for (int i : at40) {
    EXPECT_NE(std::find(at20.begin(), at20.end(), i), at20.end()) << i;
    const fs::path dir = out / sweep::trial_name(i);
    const std::string log = slurp(dir / "log.txt");
    EXPECT_NE(log.find("(global_step 10)"), std::string::npos) << log;
    EXPECT_NE(log.find("(global_step 20)"), std::string::npos) << log;
    EXPECT_EQ(json_value(dir / "result-40.json", "final_step"), "40");
  }
  // The best two at rung 10 were promoted (ASHA may have sent others on
  // earlier, from fewer results).
  auto metric_at = [&](int i, int steps) {
    return std::stod(json_value(
        out / sweep::trial_name(i) / ("result-" + std::to_string(steps) + ".json"), "value"));
  };
  std::vector<int> by10 = at10;
  std::sort(by10.begin(), by10.end(), [&](int a, int b) {
    const double ma = metric_at(a, 10), mb = metric_at(b, 10);
    return ma != mb ? ma > mb : a < b;
  });
  for (int j = 0; j < 2; ++j) {
    EXPECT_NE(std::find(at20.begin(), at20.end(), by10[j]), at20.end()) << by10[j];
  }
  EXPECT_NE(r.output.find("asynchronous successive halving over 4 trials, rungs of 10 20 40"),
            std::string::npos)
      << r.output;
  const auto rows = lines(slurp(out / "results.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_NE(rows[1].find(",40,"), std::string::npos) << rows[1];
  // Again: the same promotions from the results on disk, nothing runs.
  r = run(args, (kTmp / "asha_again.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("promoting"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(" at 10 steps "), std::string::npos) << r.output;
}

// The sweep: lenet on a Fashion-MNIST slice, each trial holding
// out a tenth of its training records as validation and reporting the test
// split beside it.
class FashionMnistSweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::create_directories(kTmp);
    auto r = run({kBin + "/convert_dataset", "--dataset_name", "fashion_mnist", "--input",
                  testing::fmnist_source(), "--dataset_dir", data_dir(), "--max_examples", "3000",
                  "--overwrite"},
                 (kTmp / "fmnist_convert.log").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static std::string data_dir() { return (kTmp / "fmnist").string(); }
  static std::vector<std::string> args(const std::vector<std::string>& own,
                                       const std::string& trial_extra = "--seed=0") {
    std::vector<std::string> a = {kBin + "/sweep", "--cores=2"};
    a.insert(a.end(), own.begin(), own.end());
    for (const std::string& t : std::vector<std::string>{
             "--", "--model_name=lenet", "--dataset_name=fashion_mnist",
             "--dataset_dir=" + data_dir(), "--validation_fraction=0.1", "--batch_size=32",
             "--optimizer=momentum", "--use_fp16=False", "--shuffle_buffer_size=1000",
             "--log_loss_every_n_iters=20", "--save_checkpoints_steps=1000", trial_extra}) {
      a.push_back(t);
    }
    return a;
  }
  // results.csv as rows of cells (no quoted cells in these sweeps).
  static std::vector<std::vector<std::string>> table(const fs::path& out) {
    std::vector<std::vector<std::string>> t;
    for (const auto& l : lines(slurp(out / "results.csv"))) {
      std::vector<std::string> cells;
      std::stringstream row(l);
      for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
      t.push_back(cells);
    }
    return t;
  }
};

TEST_F(FashionMnistSweep, RandomSweepWithADivergingTrialKilledAndRerun) {
  const fs::path out = kTmp / "fmnist_random";
  fs::remove_all(out);
  // lr 1e9 diverges within a few steps; seed 5's six draws have it once.
  std::ofstream(kTmp / "fmnist.pcs")
      << "learning_rate categorical {0.005, 0.01, 0.03, 1e9} [0.01]\n"
      << "momentum real [0.5, 0.95] [0.9]\n";
  const auto a = args({"--space=" + (kTmp / "fmnist.pcs").string(), "--num_trials=6", "--seed=5",
                       "--parallel=2", "--out=" + out.string()},
                      "--stop_at_step=60");
  {
    auto dry = a;
    dry.insert(dry.begin() + 1, "--dry_run");
    auto listed = run(dry, (kTmp / "fmnist_dry.log").string());
    ASSERT_EQ(listed.exit_code, 0) << listed.output;
    EXPECT_NE(listed.output.find("trial-005 learning_rate="), std::string::npos) << listed.output;
    EXPECT_FALSE(fs::exists(out)) << "--dry_run ran something";
  }
  testing::Child c = testing::spawn(a, (kTmp / "fmnist_random.log").string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  auto done = [&] {
    int n = 0;
    for (int i = 0; i < 6; ++i) n += fs::exists(out / sweep::trial_name(i) / "result.json");
    return n;
  };
  while (done() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(c.pid, SIGKILL);
  testing::wait_for(c, 60);
  const int finished = done();
  ASSERT_GE(finished, 1);
  ASSERT_LT(finished, 6) << "the sweep ended before it could be killed";
  auto r = run(a, (kTmp / "fmnist_random_again.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(finished) + " done earlier, " +
                          std::to_string(6 - finished) + " to run"),
            std::string::npos)
      << r.output;
  const auto t = table(out);
  ASSERT_EQ(t.size(), 7u) << slurp(out / "results.csv");
  ASSERT_GE(t[0].size(), 6u);
  EXPECT_EQ(t[0][0], "trial");
  EXPECT_EQ(t[0][2], "validation_accuracy");
  EXPECT_EQ(t[0][3], "test_accuracy");
  EXPECT_EQ(t[0][4], "learning_rate");
  int diverged = 0;
  double best = -1;
  for (size_t i = 1; i < t.size(); ++i) {
    // The status follows the learning rate: 1e9 diverges (exit 4), the
    // others finish with both metrics.
    if (t[i][4] == "1e9") {
      ++diverged;
      EXPECT_EQ(t[i][1], "diverged") << slurp(out / "results.csv");
      EXPECT_EQ(t[i][2], "");
    } else {
      EXPECT_EQ(t[i][1], "ok") << slurp(out / "results.csv");
      EXPECT_GT(std::stod(t[i][2]), 0.3);  // chance is 0.1
      EXPECT_GT(std::stod(t[i][3]), 0.3);
      best = std::max(best, std::stod(t[i][2]));
    }
  }
  EXPECT_EQ(diverged, 1) << "seed 5 no longer draws the diverging rate once";
  // The best row is the best validation metric (not the best test one).
  EXPECT_EQ(t[1][1], "ok");
  EXPECT_EQ(std::stod(t[1][2]), best);
  // Each trial's log ends with its result lines.
  EXPECT_NE(slurp(out / t[1][0] / "log.txt").find("validation_samples\t"), std::string::npos);
}

TEST_F(FashionMnistSweep, SuccessiveHalvingResumesPromotedTrialsOnTheValidationMetric) {
  const fs::path out = kTmp / "fmnist_halving";
  fs::remove_all(out);
  std::ofstream(kTmp / "fmnist_halving.csv") << "learning_rate\n0.02\n0.001\n0.05\n0.0002\n";
  const auto a = args({"--trials=" + (kTmp / "fmnist_halving.csv").string(), "--parallel=2",
                       "--min_steps=20", "--max_steps=80", "--eta=2", "--out=" + out.string()});
  auto r = run(a, (kTmp / "fmnist_halving.log").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Rungs of 20, 40 and 80 steps: 4 trials, the best 2, the best 1, ranked
  // by validation accuracy, each promotion resuming the trial's checkpoint.
  const std::vector<int> at20 = trials_at(out, 4, 20), at40 = trials_at(out, 4, 40),
                         at80 = trials_at(out, 4, 80);
  ASSERT_EQ(at20.size(), 4u);
  ASSERT_EQ(at40.size(), 2u);
  ASSERT_EQ(at80.size(), 1u);
  for (int i : at20) {
    EXPECT_EQ(json_value(out / sweep::trial_name(i) / "result-20.json", "metric"),
              "\"validation_accuracy\"");
  }
  const fs::path best = out / sweep::trial_name(at80[0]);
  const std::string log = slurp(best / "log.txt");
  EXPECT_NE(log.find("(global_step 20)"), std::string::npos) << log;
  EXPECT_NE(log.find("(global_step 40)"), std::string::npos) << log;
  EXPECT_EQ(json_value(best / "result-40.json", "final_step"), "40");
  EXPECT_EQ(json_value(best / "result-80.json", "final_step"), "80");
  const auto t = table(out);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[1][0], sweep::trial_name(at80[0]));
}

}  // namespace
}  // namespace fastnn
