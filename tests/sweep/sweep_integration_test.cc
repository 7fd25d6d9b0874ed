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

namespace fastnn {
namespace {

namespace fs = std::filesystem;
using testing::run;

const std::string kBin = FASTNN_BIN_DIR;
const fs::path kTmp = fs::path(FASTNN_TEST_TMP) / "sweep";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Every trial: lenet on mock data, a few seconds.
const std::vector<std::string> kTrialArgs = {
    "--", "--model_name=lenet", "--dataset_name=mock", "--num_classes=10", "--batch_size=16",
    "--num_sample_per_epoch=100000", "--use_fp16=False", "--optimizer=sgd",
    "--log_loss_every_n_iters=20"};

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
  auto args = sweep_args({"--trials=" + (kTmp / "trials.csv").string(), "--parallel=2",
                          "--out=" + out.string()});
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
                                    << "stop_at_step integer [100, 150]\n";
  auto args = sweep_args({"--space=" + (kTmp / "space.pcs").string(), "--num_trials=6",
                          "--seed=3", "--parallel=1", "--out=" + out.string()});
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

std::string json_value(const fs::path& file, const std::string& key) {
  const std::string text = slurp(file);
  const size_t at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 3;
  while (start < text.size() && text[start] == ' ') ++start;
  return text.substr(start, text.find_first_of(",\n}", start) - start);
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
  std::vector<int> at10, at20, at40;
  for (int i = 0; i < 4; ++i) {
    const fs::path dir = out / sweep::trial_name(i);
    if (fs::exists(dir / "result-10.json")) at10.push_back(i);
    if (fs::exists(dir / "result-20.json")) at20.push_back(i);
    if (fs::exists(dir / "result-40.json")) at40.push_back(i);
  }
  ASSERT_EQ(at10.size(), 4u);
  ASSERT_EQ(at20.size(), 2u);
  ASSERT_EQ(at40.size(), 1u);
  EXPECT_NE(std::find(at20.begin(), at20.end(), at40[0]), at20.end());
  // The promoted trials were the best at rung 10.
  auto metric_at = [&](int i, int steps) {
    return std::stod(json_value(out / sweep::trial_name(i) /
                                    ("result-" + std::to_string(steps) + ".json"),
                                "value"));
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

}  // namespace
}  // namespace fastnn
