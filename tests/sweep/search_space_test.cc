// The sweep's search spaces: SMAC's PCS syntax, CSV trials, random and grid
// draws (src/sweep/search_space.h).
#include "src/sweep/search_space.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <set>
#include <string>

#include "fastnn/errors.h"
#include "src/sweep/checks.h"
#include "src/sweep/runner.h"
#include "tests/error_of.h"

namespace fastnn::sweep {
namespace {

const char* kSpace = R"(# lenet on Fashion-MNIST
learning_rate real [1e-4, 1e-1] [1e-2] log
batch_size integer [16, 256] [32]
optimizer categorical {sgd, momentum, rmsprop} [rmsprop]
momentum real [0.5, 0.99] [0.9]
momentum | optimizer in {momentum, rmsprop}
)";

std::string error_of(const std::function<void()>& fn) {
  return ::fastnn::testing::error_of<ConfigError>(fn);
}

TEST(SearchSpace, ParsesSmacPcs) {
  const auto s = parse_pcs(kSpace, "space.pcs");
  ASSERT_EQ(s.params.size(), 4u);
  EXPECT_EQ(s.params[0].name, "learning_rate");
  EXPECT_EQ(s.params[0].kind, Param::Kind::kReal);
  EXPECT_DOUBLE_EQ(s.params[0].lo, 1e-4);
  EXPECT_DOUBLE_EQ(s.params[0].hi, 1e-1);
  EXPECT_TRUE(s.params[0].log);
  EXPECT_EQ(s.params[0].default_value, "1e-2");
  EXPECT_EQ(s.params[1].kind, Param::Kind::kInteger);
  EXPECT_FALSE(s.params[1].log);
  EXPECT_EQ(s.params[2].choices, (std::vector<std::string>{"sgd", "momentum", "rmsprop"}));
  EXPECT_EQ(s.params[2].default_value, "rmsprop");
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_EQ(s.conditions[0].child, "momentum");
  EXPECT_EQ(s.conditions[0].parent, "optimizer");
  EXPECT_EQ(s.conditions[0].values, (std::vector<std::string>{"momentum", "rmsprop"}));
}

TEST(SearchSpace, BadLinesNameTheirLine) {
  EXPECT_NE(error_of([] { parse_pcs("lr real [1, 0.1]", "s.pcs"); }).find("s.pcs:1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_pcs("\nlr real [0, 1] log", "s.pcs");
            }).find("s.pcs:2: 'lr': log needs lo > 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_pcs("o categorical {a, b} [c]", "s"); }).find("not a choice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_pcs("x real [0, 1]\nx real [0, 1]", "s"); }).find("s:2"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_pcs("x real [0, 1]\ny | z in {a}", "s"); }).find("unknown parameter"),
      std::string::npos);
  EXPECT_NE(error_of([] { parse_pcs("x ordinal {1, 2}", "s"); }).find("unknown type 'ordinal'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_pcs("x integer [0.5, 3]", "s"); }).find("integer bounds"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_pcs("# nothing\n", "s"); }).find("no parameters"),
            std::string::npos);
}

TEST(SearchSpace, RandomDrawsAreReproducibleInRangeAndRespectConditions) {
  const auto s = parse_pcs(kSpace, "space.pcs");
  const auto a = random_trials(s, 200, 7);
  EXPECT_EQ(a, random_trials(s, 200, 7));
  EXPECT_NE(a, random_trials(s, 200, 8));
  std::set<std::string> optimizers;
  int below_1e3 = 0;
  for (const auto& t : a) {
    const double lr = std::stod(t.at("learning_rate"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    below_1e3 += lr < 1e-3;
    const int bs = std::stoi(t.at("batch_size"));
    EXPECT_GE(bs, 16);
    EXPECT_LE(bs, 256);
    optimizers.insert(t.at("optimizer"));
    // momentum only where the condition holds.
    EXPECT_EQ(t.count("momentum") == 1, t.at("optimizer") != "sgd") << t.at("optimizer");
  }
  EXPECT_EQ(optimizers.size(), 3u);
  // Log-uniform: a third of the draws fall in the first decade of three.
  EXPECT_GT(below_1e3, 40);
  EXPECT_LT(below_1e3, 95);
}

TEST(SearchSpace, GridCoversEveryCombinationOnce) {
  const auto s =
      parse_pcs("lr real [0.001, 0.1] log\nopt categorical {sgd, adam}\nbs integer [1, 3]\n", "g");
  const auto g = grid_trials(s, 3);
  EXPECT_EQ(g.size(), 3u * 2u * 3u);
  std::set<Assignment> unique(g.begin(), g.end());
  EXPECT_EQ(unique.size(), g.size());
  EXPECT_EQ(g.front().at("lr"), "0.001");
  EXPECT_EQ(g.back().at("lr"), "0.1");
  std::set<std::string> lrs;
  for (const auto& t : g) lrs.insert(t.at("lr"));
  EXPECT_EQ(lrs, (std::set<std::string>{"0.001", "0.01", "0.1"}));
  // Inactive parameters collapse: momentum only with optimizer=momentum.
  const auto c =
      parse_pcs("o categorical {sgd, momentum}\nm real [0.5, 0.9]\nm | o in {momentum}\n", "c");
  EXPECT_EQ(grid_trials(c, 2).size(), 1u + 2u);
}

TEST(SearchSpace, CsvTrials) {
  const auto t =
      parse_trials_csv("learning_rate,optimizer\n0.1,sgd\n\"0.01\",\"mom,entum\"\n0.5,\n", "t.csv");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].at("learning_rate"), "0.1");
  EXPECT_EQ(t[1].at("optimizer"), "mom,entum");
  EXPECT_EQ(t[2].count("optimizer"), 0u);  // empty cell: the base config's value
  EXPECT_NE(error_of([] { parse_trials_csv("a,b\n1\n", "t.csv"); }).find("t.csv:2: 1 values for 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_trials_csv("a,b\n", "t.csv"); }).find("at least one trial"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_trials_csv("a,b,a\n1,2,3\n", "t.csv");
            }).find("t.csv:1: column 'a' appears twice"),
            std::string::npos);
}

// Files saved by Excel or Notepad start with a UTF-8 byte-order mark and
// end lines with CRLF; the config parser accepts both, so do these.
TEST(SearchSpace, ByteOrderMarkAndCrlfAreAccepted) {
  const auto s = parse_pcs(
      "\xEF\xBB\xBFlearning_rate real [1e-4, 1e-1] log\r\n"
      "optimizer categorical {sgd, adam}\r\n",
      "space.pcs");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "learning_rate");
  EXPECT_TRUE(s.params[0].log);
  EXPECT_EQ(s.params[1].choices, (std::vector<std::string>{"sgd", "adam"}));
  const auto t = parse_trials_csv("\xEF\xBB\xBFlearning_rate,optimizer\r\n0.1,sgd\r\n", "t.csv");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], (Assignment{{"learning_rate", "0.1"}, {"optimizer", "sgd"}}));
  // UTF-16 (Excel's "Unicode text") is not read as garbage names.
  const std::string utf16("\xFF\xFEl\0r\0", 6);
  EXPECT_NE(error_of([&] { parse_pcs(utf16, "space.pcs"); }).find("space.pcs: a NUL byte"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_trials_csv(utf16, "t.csv"); }).find("UTF-16"), std::string::npos);
  // Only at the very start: a mark inside a name stays part of it.
  EXPECT_EQ(parse_trials_csv("a,\xEF\xBB\xBF"
                             "b\n1,2\n",
                             "t.csv")[0]
                .count("\xEF\xBB\xBF"
                       "b"),
            1u);
}

TEST(SearchSpace, ResultsCsvHasEveryParameterQuotedWhereNeeded) {
  TrialResult a{0, {{"lr", "0.1"}}, "d0", "ok", 0, 0.8, true, 100, 5.0};
  TrialResult b{1, {{"lr", "0.2"}, {"bs", "8"}}, "d1", "diverged", 4, 0, false, 7, 1.0};
  TrialResult c{2, {{"lr", "0.3"}}, "d,2", "ok", 0, 0.9, true, 100, 6.0};
  const std::string csv = results_csv({c, a, b}, "eval_accuracy");
  EXPECT_EQ(csv,
            "trial,status,eval_accuracy,bs,lr,final_step,wall_secs,exit_code,train_dir\n"
            "trial-002,ok,0.9,,0.3,100,6.0,0,\"d,2\"\n"
            "trial-000,ok,0.8,,0.1,100,5.0,0,d0\n"
            "trial-001,diverged,,8,0.2,7,1.0,4,d1\n");
}

TEST(SearchSpace, SweepExitCodeSaysWhetherAnyTrialGaveAResult) {
  auto with = [](std::vector<std::pair<std::string, int>> ends) {
    SweepOutcome o;
    for (const auto& [status, code] : ends) {
      TrialResult r;
      r.index = static_cast<int>(o.results.size());
      r.dir = "out/" + trial_name(r.index) + "/train";
      r.status = status;
      r.exit_code = code;
      r.has_metric = status == "ok";
      o.results.push_back(r);
    }
    return o;
  };
  std::string why;
  EXPECT_EQ(sweep_exit_code(with({{"ok", 0}, {"diverged", 4}}), "m", 0, &why), 0);
  EXPECT_EQ(sweep_exit_code(with({{"diverged", 4}, {"diverged", 4}}), "m", 0, &why), 4);
  EXPECT_NE(why.find("no trial produced a result (exit 4: trial-000 trial-001); see "
                     "out/trial-000/log.txt"),
            std::string::npos)
      << why;
  EXPECT_EQ(sweep_exit_code(with({{"failed", 2}, {"failed", 2}}), "m", 0, &why), 2);
  EXPECT_EQ(sweep_exit_code(with({{"failed", 7}, {"failed", 7}}), "m", 0, &why), 7);
  EXPECT_EQ(sweep_exit_code(with({{"failed", 2}, {"diverged", 4}}), "m", 0, &why), 1);
  EXPECT_EQ(sweep_exit_code(with({{"failed", 137}}), "m", 0, &why), 1);
  EXPECT_EQ(sweep_exit_code(with({{"no_metric", 0}, {"no_metric", 0}}), "m", 0, &why), 2);
  EXPECT_NE(why.find("'m'"), std::string::npos) << why;
  // Interrupted, or trials stopped by a signal: run it again.
  EXPECT_EQ(sweep_exit_code(with({{"ok", 0}}), "m", SIGINT, &why), 130);
  auto stopped = with({{"ok", 0}});
  stopped.stopped = 1;
  EXPECT_EQ(sweep_exit_code(stopped, "m", 0, &why), 143);
  EXPECT_NE(why.find("run the same command again"), std::string::npos) << why;
}

TEST(SearchSpace, HalvingRungsMultiplyByEtaUpToTheLast) {
  EXPECT_EQ(halving_rungs(10, 40, 2), (std::vector<int64_t>{10, 20, 40}));
  EXPECT_EQ(halving_rungs(100, 1000, 3), (std::vector<int64_t>{100, 300, 900, 1000}));
  EXPECT_EQ(halving_rungs(5, 6, 4), (std::vector<int64_t>{5, 6}));
}

}  // namespace
}  // namespace fastnn::sweep
