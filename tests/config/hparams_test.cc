// Tests for the hyperparameter file / command-line loader and its renderings.
#include "fastnn/hparams.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "fastnn/errors.h"
#include "src/config/hparams_table.h"
#include "src/config/job_settings.h"
#include "src/config/value_parse.h"
#include "tests/error_of.h"
#include "tests/test_paths.h"

#ifndef FASTNN_SOURCE_DIR
#error "FASTNN_SOURCE_DIR must name the source tree"
#endif

namespace fastnn {
namespace {

namespace fs = std::filesystem;

// Every flag of FastNN's images/flags.py (docs/hyperparameters.md).
const char* const kFastnnFlags[] = {"task_index",
                                    "taskId",
                                    "worker_hosts",
                                    "ps_hosts",
                                    "worker_count",
                                    "ps_count",
                                    "job_name",
                                    "task_type",
                                    "model_name",
                                    "model_dir",
                                    "ckpt_file_name",
                                    "num_classes",
                                    "num_epochs",
                                    "weight_decay",
                                    "batch_size",
                                    "max_gradient_norm",
                                    "dataset_name",
                                    "dataset_dir",
                                    "file_pattern",
                                    "reader",
                                    "num_sample_per_epoch",
                                    "train_files",
                                    "eval_files",
                                    "num_preprocessing_threads",
                                    "preprocessing_name",
                                    "shuffle_buffer_size",
                                    "prefetch_buffer_size",
                                    "num_parallel_batches",
                                    "datasets_use_caching",
                                    "labels_offset",
                                    "use_fp16",
                                    "loss_scale",
                                    "learning_rate_decay_type",
                                    "learning_rate",
                                    "end_learning_rate",
                                    "learning_rate_decay_factor",
                                    "warmup_steps",
                                    "warmup_scheme",
                                    "decay_scheme",
                                    "optimizer",
                                    "adadelta_rho",
                                    "adagrad_initial_accumulator_value",
                                    "adam_beta1",
                                    "adam_beta2",
                                    "opt_epsilon",
                                    "ftrl_learning_rate_power",
                                    "ftrl_initial_accumulator_value",
                                    "ftrl_l1",
                                    "ftrl_l2",
                                    "momentum",
                                    "rmsprop_momentum",
                                    "rmsprop_decay",
                                    "stop_at_step",
                                    "log_loss_every_n_iters",
                                    "profile_every_n_iters",
                                    "profile_at_task",
                                    "log_device_placement",
                                    "log_trainable_vars_statistics",
                                    "log_optimizer_vars_statistics",
                                    "hooks",
                                    "protocol",
                                    "inter_op_parallelism_threads",
                                    "intra_op_parallelism_threads",
                                    "colocate_gradients_with_ops",
                                    "tables",
                                    "buckets",
                                    "outputs",
                                    "summaryDir",
                                    "output_dir",
                                    "checkpointDir",
                                    "save_checkpoints_steps",
                                    "enable_paisoar",
                                    "tensor_fusion_policy",
                                    "communication_policy",
                                    "tensor_fusion_max_bytes"};

class HParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hparams_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to dir_/name and returns the path.
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static LoadResult load(std::vector<std::string> args,
                         const std::vector<std::string>& extra = {}) {
    std::vector<const char*> argv = {"prog"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    return load_hparams(static_cast<int>(argv.size()), argv.data(), extra);
  }

  // The ConfigError message of `fn`, or "" if it did not throw one.
  static std::string error_of(const std::function<void()>& fn) {
    return ::fastnn::testing::error_of<ConfigError>(fn);
  }

  std::string load_error(const std::string& text) {
    std::string path = write("flowers.cfg", text);
    return error_of([&] { load({"--config", path}); });
  }

  std::string dir_;
};

TEST(ValueParseTest, Bool) {
  bool v = false;
  for (const char* t : {"True", "true", "1"}) {
    EXPECT_TRUE(config::parse_bool(t, &v) && v) << t;
  }
  for (const char* t : {"False", "false", "0"}) {
    EXPECT_TRUE(config::parse_bool(t, &v) && !v) << t;
  }
  for (const char* t : {"yes", "TRUE", "", "2", "None"}) {
    EXPECT_FALSE(config::parse_bool(t, &v)) << t;
  }
}

TEST(ValueParseTest, Int) {
  using config::NumberStatus;
  int64_t v = 0;
  EXPECT_EQ(config::parse_int("42", &v), NumberStatus::kOk);
  EXPECT_EQ(v, 42);
  EXPECT_EQ(config::parse_int("-7", &v), NumberStatus::kOk);
  EXPECT_EQ(v, -7);
  EXPECT_EQ(config::parse_int("+8", &v), NumberStatus::kOk);
  EXPECT_EQ(v, 8);
  for (const char* t : {"1.5", "abc", "", "1e3", "0x10", "12abc", "+-1"}) {
    EXPECT_EQ(config::parse_int(t, &v), NumberStatus::kNotANumber) << t;
  }
  EXPECT_EQ(config::parse_int("99999999999999999999", &v), NumberStatus::kOutOfRange);
}

TEST(ValueParseTest, Double) {
  using config::NumberStatus;
  double v = 0;
  EXPECT_EQ(config::parse_double("1e-4", &v), NumberStatus::kOk);
  EXPECT_DOUBLE_EQ(v, 1e-4);
  EXPECT_EQ(config::parse_double("3", &v), NumberStatus::kOk);
  EXPECT_DOUBLE_EQ(v, 3.0);
  EXPECT_EQ(config::parse_double(".5", &v), NumberStatus::kOk);
  EXPECT_DOUBLE_EQ(v, 0.5);
  for (const char* t : {"nan", "inf", "-inf", "abc", "", "0.1x", "0x1p3", "1,5", "."}) {
    EXPECT_NE(config::parse_double(t, &v), NumberStatus::kOk) << t;
  }
  EXPECT_EQ(config::parse_double("1e999", &v), NumberStatus::kOutOfRange);
}

TEST(ValueParseTest, FormatDoubleRoundTrips) {
  EXPECT_EQ(config::format_double(1.0), "1.0");
  EXPECT_EQ(config::format_double(0.01), "0.01");
  EXPECT_EQ(config::format_double(4e-5), "4e-05");
  for (double d : {0.1, 1.0 / 3, 123456789.125, -2.5e-300, 0.94}) {
    double back = 0;
    ASSERT_EQ(config::parse_double(config::format_double(d), &back), config::NumberStatus::kOk);
    EXPECT_EQ(back, d);
  }
}

TEST(ValueParseTest, Quotes) {
  EXPECT_EQ(config::strip_quotes("'a b'"), "a b");
  EXPECT_EQ(config::strip_quotes("\"x\""), "x");
  EXPECT_EQ(config::strip_quotes("'x\""), "'x\"");
  EXPECT_EQ(config::quote_if_needed("plain"), "plain");
  EXPECT_EQ(config::quote_if_needed("a #b"), "'a #b'");
  EXPECT_EQ(config::quote_if_needed("None"), "'None'");
  EXPECT_EQ(config::quote_if_needed(""), "''");
}

TEST(ValueParseTest, QuoteValueShowsAtMost100Bytes) {
  EXPECT_EQ(config::quote_value("abc"), "'abc'");
  EXPECT_EQ(config::quote_value(""), "''");
  const std::string hundred(100, 'a');
  EXPECT_EQ(config::quote_value(hundred), "'" + hundred + "'");
  const std::string big(10 << 20, 'x');
  EXPECT_EQ(config::quote_value(big), "'" + std::string(100, 'x') + "'... (10485760 bytes)");
  // The cut never splits a UTF-8 character: 99 bytes, then a 2-byte one.
  const std::string accented = std::string(99, 'a') + "\xC3\xA9" + "bcd";
  EXPECT_EQ(config::quote_value(accented), "'" + std::string(99, 'a') + "'... (104 bytes)");
}

TEST_F(HParamsTest, DefaultsAreFastNNs) {
  HParams hp;
  EXPECT_EQ(hp.opt_epsilon, 1.0);
  EXPECT_TRUE(hp.use_fp16);
  EXPECT_TRUE(hp.enable_paisoar);
  EXPECT_EQ(hp.rmsprop_decay, 0.9);
  EXPECT_EQ(hp.stop_at_step, 100);
  EXPECT_EQ(hp.tensor_fusion_max_bytes, 8388608);
  EXPECT_EQ(hp.optimizer, "rmsprop");
  EXPECT_EQ(hp.learning_rate, 0.01);
  EXPECT_EQ(hp.batch_size, 32);
  EXPECT_EQ(hp.weight_decay, 4e-5);
  EXPECT_EQ(hp.model_name, "inception_resnet_v2");
  EXPECT_EQ(hp.dataset_name, "mock");
  EXPECT_EQ(hp.learning_rate_decay_factor, 0.94);
  EXPECT_EQ(hp.job_name, "worker");
  EXPECT_EQ(hp.output_dir, ".");
  EXPECT_FALSE(hp.num_classes.has_value());  // FastNN: 100, documented
  EXPECT_FALSE(hp.worker_count.has_value());
  EXPECT_EQ(hp.where("batch_size"), "default");
  EXPECT_NO_THROW(validate(hp));
  EXPECT_NO_THROW(load({}));
}

TEST_F(HParamsTest, EveryFastNNFlagIsKnown) {
  for (const char* name : kFastnnFlags) {
    const char* canonical = config::resolve_alias(name);
    EXPECT_NE(config::find_key(canonical ? canonical : name), nullptr) << name;
  }
}

TEST_F(HParamsTest, LoadsFileWithCommentsQuotesAndDashes) {
  std::string path = write("a.cfg",
                           "# a comment\n"
                           "\n"
                           "  learning_rate = 0.1  # inline note\n"
                           "--batch_size=64\n"
                           "model_dir='/models/with #hash'  # note\n"
                           "train_files=a#b,c\n"
                           "dataset_dir=\"/data/x y\"\n"
                           "use_fp16=False\n"
                           "num_classes=5\n"
                           "max_gradient_norm=None\n"
                           "ckpt_file_name='it's'\n");
  LoadResult r = load({"--config=" + path});
  EXPECT_EQ(r.config_path, path);
  EXPECT_EQ(r.hp.learning_rate, 0.1);
  EXPECT_EQ(r.hp.batch_size, 64);
  EXPECT_EQ(r.hp.model_dir, "/models/with #hash");
  EXPECT_EQ(r.hp.train_files, "a#b,c");
  EXPECT_EQ(r.hp.dataset_dir, "/data/x y");
  EXPECT_FALSE(r.hp.use_fp16);
  EXPECT_EQ(r.hp.num_classes, 5);
  EXPECT_FALSE(r.hp.max_gradient_norm.has_value());
  EXPECT_EQ(r.hp.ckpt_file_name, "it's");
  EXPECT_EQ(r.hp.where("learning_rate"), path + ":3");
  EXPECT_EQ(r.hp.where("optimizer"), "default");
  EXPECT_TRUE(r.warnings.empty());
}

TEST_F(HParamsTest, FileErrors) {
  std::string p = dir_ + "/flowers.cfg";
  EXPECT_EQ(load_error("\nlearning_rate=abc\n"),
            p + ":2: learning_rate: 'abc' is not a number (expected a float, "
                "e.g. 0.01)");
  // An unknown optimizer name is the optimizer table's error (optim_test).
  EXPECT_EQ(load_error("warmup_scheme=cosine\n"),
            p + ":1: warmup_scheme: 'cosine' is not valid; valid values: t2t, linear, none, ''");
  EXPECT_EQ(load_error("a=1\nbatch_size 3\n"), p + ":1: unknown key 'a' (--help lists the keys)");
  EXPECT_EQ(load_error("batch_size 3\n"), p + ":1: missing '=' (expected key=value)");
  EXPECT_EQ(load_error("learing_rate=0.1\n"), p + ":1: unknown key 'learing_rate'; did you mean "
                                                  "'learning_rate'?");
  EXPECT_EQ(load_error("batch_size=0\n"), p + ":1: batch_size: 0 is out of range (must be >= 1)");
  EXPECT_EQ(load_error("label_smoothing=1\n"),
            p + ":1: label_smoothing: 1.0 is out of range (must be in [0, 1))");
  EXPECT_EQ(load_error("batch_size=None\n"),
            p + ":1: batch_size: None is not allowed (expected an integer, "
                "e.g. 32)");
  EXPECT_EQ(load_error("batch_size=1.5\n"),
            p + ":1: batch_size: '1.5' is not an integer (expected an "
                "integer, e.g. 32)");
  EXPECT_EQ(load_error("num_classes=x\n"),
            p + ":1: num_classes: 'x' is not an integer (expected an integer "
                "or None)");
  EXPECT_EQ(load_error("use_fp16=yes\n"),
            p + ":1: use_fp16: 'yes' is not a boolean (expected True or "
                "False)");
  EXPECT_EQ(load_error("stop_at_step=99999999999999999999\n"),
            p + ":1: stop_at_step: '99999999999999999999' is out of range "
                "(expected a 64-bit integer)");
  EXPECT_EQ(load_error("model_dir='abc\n"), p + ":1: model_dir: unterminated quote in 'abc");
  EXPECT_EQ(load_error("=3\n"), p + ":1: missing key before '='");
  EXPECT_EQ(error_of([&] {
              load({"--config", dir_ + "/x.cfg"});
            }),
            "cannot read config file '" + dir_ + "/x.cfg': No such file or directory");
}

// Untrusted config files: a binary file, a 10 MB line, a huge
// file and an endless device are clear errors, read no further than the
// limit, and quote none of their bytes.
TEST_F(HParamsTest, BinaryAndHugeConfigFilesAreRefused) {
  std::string p = dir_ + "/flowers.cfg";
  EXPECT_EQ(load_error(std::string("batch_size=3\nlr\0x=1\n", 20)),
            p + ":2: a NUL byte (at byte offset 15): this is a binary file, "
                "not a key=value config");
  EXPECT_EQ(load_error("batch_size=3\nmodel_dir=" + std::string(10 << 20, 'a') + "\n"),
            p + ":2: the line is longer than 65536 bytes: not a key=value config");
  std::string many;
  while (many.size() <= (4u << 20))
    many += "# a comment line that is not short at all, to fill the file\n";
  EXPECT_EQ(load_error(many),
            "config file '" + p + "' is over 4194304 bytes: not a key=value config");
  EXPECT_EQ(error_of([&] {
              load({"--config", "/dev/zero"});
            }),
            "/dev/zero:1: a NUL byte (at byte offset 0): this is a binary "
            "file, not a key=value config");
  // Windows line ends still load.
  LoadResult r = load({"--config", write("crlf.cfg", "batch_size=3\r\nlearning_rate=0.5\r\n")});
  EXPECT_EQ(r.hp.batch_size, 3);
  EXPECT_EQ(r.hp.learning_rate, 0.5);
}

TEST_F(HParamsTest, CommandLineForms) {
  LoadResult r = load({"--learning_rate=0.5", "--batch_size", "8", "--datasets_use_caching",
                       "--nouse_fp16", "--end_learning_rate", "-0", "-seed=3"});
  EXPECT_EQ(r.hp.learning_rate, 0.5);
  EXPECT_EQ(r.hp.batch_size, 8);
  EXPECT_TRUE(r.hp.datasets_use_caching);
  EXPECT_FALSE(r.hp.use_fp16);
  EXPECT_EQ(r.hp.seed, 3);
  EXPECT_EQ(r.hp.where("batch_size"), "command line");
  EXPECT_FALSE(r.dry_run || r.print_cluster || r.help || r.version);
  r = load({"--dry_run", "--print_cluster", "--enable_paisoar=false"});
  EXPECT_TRUE(r.dry_run && r.print_cluster);
  EXPECT_FALSE(r.hp.enable_paisoar);
  EXPECT_TRUE(load({"--bogus", "-h"}).help);
  EXPECT_TRUE(load({"--help"}).help);
  EXPECT_TRUE(load({"--version"}).version);
}

TEST_F(HParamsTest, CommandLineErrors) {
  EXPECT_EQ(error_of([] { load({"--learing_rate=0.1"}); }),
            "command line: --learing_rate=0.1: unknown key 'learing_rate'; "
            "did you mean 'learning_rate'?");
  EXPECT_EQ(error_of([] { load({"--learning_rate=abc"}); }),
            "command line: learning_rate: 'abc' is not a number (expected a "
            "float, e.g. 0.01)");
  EXPECT_EQ(
      error_of([] { load({"--warmup_scheme=cosine"}); }),
      "command line: warmup_scheme: 'cosine' is not valid; valid values: t2t, linear, none, ''");
  EXPECT_EQ(error_of([] { load({"--batch_size=0"}); }),
            "command line: batch_size: 0 is out of range (must be >= 1)");
  EXPECT_EQ(error_of([] { load({"--batch_size"}); }),
            "command line: --batch_size: missing value (expected "
            "--batch_size=VALUE)");
  EXPECT_EQ(error_of([] { load({"--nobatch_size"}); }),
            "command line: --nobatch_size: 'batch_size' is not a bool key, so "
            "it has no --no form");
  EXPECT_EQ(error_of([] { load({"False"}); }),
            "command line: unexpected argument 'False' (expected "
            "--KEY=VALUE)");
  EXPECT_EQ(error_of([] { load({"--config"}); }), "command line: --config: missing file name");
  EXPECT_EQ(error_of([] { load({"--config="}); }), "command line: --config: missing file name");
  EXPECT_EQ(error_of([] { load({"--dry_run=maybe"}); }),
            "command line: --dry_run=maybe: 'maybe' is not a boolean "
            "(expected True or False)");
}

// The augmentation and mixup keys: bad values are configuration errors (exit code 2).
TEST_F(HParamsTest, AugmentationAndMixupKeysRefuseBadValues) {
  EXPECT_EQ(error_of([] { load({"--augment_policy=autoaugment_cifar10"}); }),
            "command line: augment_policy: 'autoaugment_cifar10' is not valid; valid values: "
            "none, autoaugment_imagenet, randaugment, trivialaugment");
  EXPECT_EQ(error_of([] { load({"--randaugment_magnitude=31"}); }),
            "command line: randaugment_magnitude: 31 is out of range (must be in [0, 30])");
  EXPECT_NE(error_of([] { load({"--randaugment_num_ops=-1"}); }), "");
  EXPECT_NE(error_of([] { load({"--random_erasing_prob=1.5"}); }), "");
  EXPECT_NE(error_of([] { load({"--mixup_alpha=-0.2"}); }), "");
  EXPECT_NE(error_of([] { load({"--cutmix_alpha=-1"}); }), "");
  EXPECT_NE(error_of([] { load({"--mixup_prob=2"}); }), "");
  EXPECT_NE(error_of([] { load({"--mixup_switch_prob=-0.1"}); }), "");
  const HParams hp =
      load({"--augment_policy=randaugment", "--randaugment_num_ops=3", "--randaugment_magnitude=30",
            "--random_erasing_prob=0.25", "--mixup_alpha=0.8", "--cutmix_alpha=1.0",
            "--mixup_prob=0.5", "--mixup_switch_prob=1"})
          .hp;
  EXPECT_EQ(hp.augment_policy, "randaugment");
  EXPECT_EQ(hp.randaugment_num_ops, 3);
  EXPECT_EQ(hp.randaugment_magnitude, 30);
  EXPECT_EQ(hp.random_erasing_prob, 0.25);
  EXPECT_EQ(hp.mixup_alpha, 0.8);
  EXPECT_EQ(hp.cutmix_alpha, 1.0);
  EXPECT_EQ(hp.mixup_prob, 0.5);
  EXPECT_EQ(hp.mixup_switch_prob, 1.0);
}

TEST_F(HParamsTest, CommandLineWinsOverFile) {
  std::string path = write("a.cfg", "batch_size=64\noptimizer=adam\n");
  LoadResult r = load({"--batch_size=16", "--config", path});
  EXPECT_EQ(r.hp.batch_size, 16);
  EXPECT_EQ(r.hp.optimizer, "adam");
  EXPECT_EQ(r.hp.where("batch_size"), "command line");
  EXPECT_EQ(r.hp.where("optimizer"), path + ":2");
  // A bad file value that the command line replaces is still reported.
  path = write("b.cfg", "batch_size=abc\n");
  EXPECT_NE(error_of([&] { load({"--config", path, "--batch_size=4"}); }), "");
  // An out-of-range file value that the command line replaces is fine.
  path = write("c.cfg", "batch_size=0\n");
  EXPECT_EQ(load({"--config", path, "--batch_size=4"}).hp.batch_size, 4);
}

TEST_F(HParamsTest, AliasesWarnAndSetTheCanonicalKey) {
  std::string path = write("flowers.cfg",
                           "# c\n\n\nenable_paisora=False\n"
                           "checkpointDir=/tmp/run\n");
  LoadResult r = load({"--config", path, "--max_number_of_steps=7", "--log_every_n_steps", "3"});
  EXPECT_FALSE(r.hp.enable_paisoar);
  EXPECT_EQ(r.hp.train_dir, "/tmp/run");
  EXPECT_EQ(r.hp.stop_at_step, 7);
  EXPECT_EQ(r.hp.log_loss_every_n_iters, 3);
  ASSERT_EQ(r.warnings.size(), 4u);
  EXPECT_EQ(r.warnings[0], path +
                               ":4: 'enable_paisora' is an alias of "
                               "'enable_paisoar'; use the canonical name");
  EXPECT_EQ(r.warnings[2],
            "command line: 'max_number_of_steps' is an alias "
            "of 'stop_at_step'; use the canonical name");
  EXPECT_TRUE(load({"--noenable_paisora"}).hp.enable_paisoar == false);
}

TEST_F(HParamsTest, IgnoredKeysAreAcceptedWithANote) {
  std::string path = write("a.cfg",
                           "ps_hosts=h1:2222\nprotocol=grpc\n"
                           "inter_op_parallelism_threads=4\n");
  LoadResult r = load({"--config", path});
  EXPECT_EQ(r.hp.ps_hosts, "h1:2222");
  ASSERT_EQ(r.warnings.size(), 2u);  // protocol=grpc is the default: silent
  EXPECT_EQ(r.warnings[0], path + ":1: 'ps_hosts' has no effect in FastNN-C++ (ignored key)");
  EXPECT_NE(r.warnings[1].find("inter_op_parallelism_threads"), std::string::npos);
}

TEST_F(HParamsTest, DuplicateKeyLastWinsWithWarning) {
  std::string path = write("a.cfg", "batch_size=8\nlearning_rate=0.1\nbatch_size=16\n");
  LoadResult r = load({"--config", path});
  EXPECT_EQ(r.hp.batch_size, 16);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], path +
                               ":3: 'batch_size' is set again (first set "
                               "on line 1); the last value wins");
}

TEST_F(HParamsTest, RepeatedCommandLineKeyWarnsAndTheLastWins) {
  LoadResult r = load({"--learning_rate=0.1", "--learning_rate=0.2"});
  EXPECT_EQ(r.hp.learning_rate, 0.2);
  EXPECT_EQ(r.warnings,
            (std::vector<std::string>{"command line: 'learning_rate' is set again: '0.2' replaces "
                                      "'0.1' (the last value wins)"}));
  // Other spellings of the same key count: --KEY VALUE, --noKEY, aliases.
  r = load({"--batch_size", "8", "--use_fp16", "--batch_size=4", "--nouse_fp16"});
  EXPECT_EQ(r.hp.batch_size, 4);
  EXPECT_FALSE(r.hp.use_fp16);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_EQ(r.warnings[0],
            "command line: 'batch_size' is set again: '4' replaces '8' (the "
            "last value wins)");
  EXPECT_EQ(r.warnings[1],
            "command line: 'use_fp16' is set again: 'False' replaces 'True' "
            "(the last value wins)");
  r = load({"--max_number_of_steps=5", "--stop_at_step=9"});
  EXPECT_EQ(r.hp.stop_at_step, 9);
  ASSERT_EQ(r.warnings.size(), 2u);  // the repeat, then the alias
  EXPECT_EQ(r.warnings[0],
            "command line: 'stop_at_step' is set again: '9' replaces '5' (the "
            "last value wins)");
  // A tool's own flag given twice, too; a file value then a flag is not a
  // repeat (the command line wins by design).
  r = load({"--input=/a", "--input", "/b"}, {"input"});
  EXPECT_EQ(r.extras.at("input"), "/b");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("'input' is set again: '/b' replaces '/a'"), std::string::npos);
  const std::string path = write("a.cfg", "batch_size=8\n");
  EXPECT_TRUE(load({"--config", path, "--batch_size=4"}).warnings.empty());
}

TEST_F(HParamsTest, EmptyConfigFileWarns) {
  for (const char* text : {"", "# only a comment\n\n   \n\t# another\n"}) {
    const std::string path = write("empty.cfg", text);
    LoadResult r = load({"--config", path, "--batch_size=4"});
    EXPECT_EQ(r.hp.batch_size, 4);
    EXPECT_EQ(r.warnings,
              (std::vector<std::string>{path + ": the config file sets no key (it is empty or "
                                               "holds only comments and blank lines)"}))
        << "text: " << text;
  }
  EXPECT_TRUE(load({"--config", write("one.cfg", "# c\nbatch_size=8\n")}).warnings.empty());
  // A folder is not an empty file.
  EXPECT_EQ(error_of([&] {
              load({"--config", dir_});
            }),
            "cannot read config file '" + dir_ + "': it is a folder");
}

// True when `msg` is short and names a value by its first 100 bytes.
::testing::AssertionResult is_cut(const std::string& msg) {
  if (msg.size() < 400 && msg.find("'... (") != std::string::npos &&
      msg.find(" bytes)") != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << msg.size() << " bytes: " << msg.substr(0, 400);
}

TEST_F(HParamsTest, ErrorsShowAtMost100BytesOfAValue) {
  const std::string big(10 << 20, 'x');  // 10 MB
  // An invalid choice, an unknown key, a bad --dry_run, a stray argument,
  // a config path that cannot be read.
  EXPECT_TRUE(is_cut(error_of([&] { load({"--warmup_scheme", big}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({"--" + big + "=1"}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({"--dry_run=" + big}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({big}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({"--config", big}); })));
  // The same from a file line, just under the 64 KiB line limit (a 10 MB
  // line is refused whole: BinaryAndHugeConfigFilesAreRefused).
  const std::string long_value(60000, 'x');
  EXPECT_TRUE(is_cut(load_error(long_value + "=1\n")));
  EXPECT_TRUE(is_cut(load_error("warmup_scheme=" + long_value + "\n")));
  EXPECT_TRUE(is_cut(load_error("model_dir='" + long_value + "\n")));
  // A short value is shown whole.
  EXPECT_EQ(error_of([] { load({"--warmup_scheme=cosine"}); }),
            "command line: warmup_scheme: 'cosine' is not valid; valid "
            "values: t2t, linear, none, ''");
}

TEST_F(HParamsTest, ValueErrorsShowAtMost100BytesOfAValue) {
  // Not a number, out of the 64-bit range, not a boolean (the messages of
  // config::assign_value).
  const std::string big(10 << 20, '7');
  EXPECT_TRUE(is_cut(error_of([&] { load({"--stop_at_step=" + big}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({"--learning_rate=x" + big}); })));
  EXPECT_TRUE(is_cut(error_of([&] { load({"--use_fp16=" + big}); })));
  EXPECT_TRUE(is_cut(load_error("batch_size=" + std::string(60000, '7') + "x\n")));
}

TEST_F(HParamsTest, ExtraKeys) {
  LoadResult r = load({"--input", "/raw", "--dataset_name=mnist", "--force"}, {"input", "force"});
  EXPECT_EQ(r.extras.at("input"), "/raw");
  EXPECT_EQ(r.extras.at("force"), "True");
  EXPECT_EQ(r.hp.dataset_name, "mnist");
  EXPECT_EQ(error_of([] { load({"--inptu=x"}, {"input"}); }),
            "command line: --inptu=x: unknown key 'inptu'; did you mean "
            "'input'?");
}

TEST_F(HParamsTest, CrossKeyValidation) {
  HParams hp;
  hp.worker_hosts = "a:1,b:2";
  hp.task_index = 2;
  EXPECT_EQ(error_of([&] { validate(hp); }),
            "task_index: 2 is out of range (must be < 2, the number of "
            "worker_hosts)");
  hp.task_index = 1;
  EXPECT_NO_THROW(validate(hp));
  hp.learning_rate_decay_type = "cosine";
  hp.warmup_steps = 100;
  hp.sources["learning_rate_decay_type"] = "x.cfg:9";
  EXPECT_EQ(error_of([&] { validate(hp); }),
            "x.cfg:9: learning_rate_decay_type: 'cosine' needs stop_at_step "
            "(100) > warmup_steps (100)");
  // A horizon from num_epochs is checked once the dataset is known (by the
  // trainer's schedule_from_hparams), not here.
  hp.sources["num_epochs"] = "x.cfg:3";
  EXPECT_NO_THROW(validate(hp));
  hp = HParams();
  hp.warmup_epochs = 5.0;
  EXPECT_NO_THROW(validate(hp));
  hp.warmup_steps = 10;
  hp.sources["warmup_epochs"] = "x.cfg:4";
  hp.sources["warmup_steps"] = "command line";
  EXPECT_EQ(error_of([&] { validate(hp); }),
            "x.cfg:4: warmup_epochs: cannot be combined with warmup_steps 10 "
            "(command line); set one of them");
  hp = HParams();
  hp.task_type = "finetune";
  EXPECT_NE(error_of([&] { validate(hp); }), "");
  hp.model_dir = "/m";
  EXPECT_NO_THROW(validate(hp));
  hp.num_epochs_per_decay = 2.0;
  hp.decay_scheme = "luong5";
  EXPECT_NE(error_of([&] { validate(hp); }), "");
  hp.decay_scheme = "";
  EXPECT_NO_THROW(validate(hp));
  hp.opt_epsilon = 0;
  EXPECT_EQ(error_of([&] { validate(hp); }), "opt_epsilon: 0.0 is out of range (must be > 0)");
  hp = HParams();
  hp.synthetic_device_inputs = true;
  hp.dataset_name = "mock";
  EXPECT_NO_THROW(validate(hp));
  hp.dataset_name = "flowers";
  hp.sources["synthetic_device_inputs"] = "command line";
  EXPECT_EQ(error_of([&] { validate(hp); }),
            "command line: synthetic_device_inputs: needs dataset_name=mock (it replaces the "
            "input pipeline with random images), not 'flowers'");
}

TEST_F(HParamsTest, FormatHparamsRoundTrips) {
  HParams hp;
  hp.model_dir = "/a #b";
  hp.dataset_dir = " padded ";
  hp.train_files = "'quoted'";
  hp.ckpt_file_name = "None";
  hp.hooks = "StopAtStepHook";
  hp.num_classes = 17;
  hp.moving_average_decay = 0.9999;
  hp.learning_rate = 1.0 / 3;
  hp.weight_decay = 0;
  hp.use_fp16 = false;
  hp.decay_scheme = "luong5";
  hp.warmup_scheme = "";
  hp.batch_size = 7;
  hp.ps_hosts = "h:1";
  hp.worker_count = 3;
  std::string text = format_hparams(hp);
  std::string path = write("config.cfg", text);
  LoadResult r = load({"--config", path});
  for (const config::KeySpec& spec : config::key_table()) {
    EXPECT_TRUE(config::same_value(spec, hp, r.hp)) << spec.name;
  }
  EXPECT_EQ(format_hparams(r.hp), text);
  EXPECT_NE(text.find("batch_size=7  # default: 32\n"), std::string::npos);
  EXPECT_NE(text.find("num_epochs_per_decay=None\n"), std::string::npos);
  EXPECT_NE(text.find("warmup_scheme=''  # default: t2t\n"), std::string::npos);
  // Defaults round-trip too.
  path = write("defaults.cfg", format_hparams(HParams()));
  r = load({"--config", path});
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(format_hparams(r.hp), format_hparams(HParams()));
}

// Every string value config.cfg holds reloads byte for byte
// (awkward values from a fixed list and 3000 seeded random ones over quotes
// of both kinds, '#', '\', '=', spaces, tab, CR, LF, NUL, UTF-8, a BOM),
// and a value that no line can hold is refused by validate() (exit 2),
// naming the key. Only values with a line feed or a NUL byte, or with both
// quote characters each closing early, may be refused.
TEST_F(HParamsTest, EveryStringValueRoundTripsThroughConfigCfgOrIsRefused) {
  std::vector<std::string> values = {"/runs/qa' #b",
                                     "/runs/qa\" #b",
                                     "a' #b\" #c",
                                     "x'\t#",
                                     "'",
                                     "\"",
                                     "''",
                                     "'a'",
                                     "\"a\"",
                                     "'a\"",
                                     "#",
                                     " #",
                                     "# a",
                                     "a#b",
                                     "a #b",
                                     "=",
                                     "a=b",
                                     "==",
                                     "\\",
                                     "a\\'",
                                     "\\n",
                                     " lead",
                                     "trail ",
                                     "\t",
                                     " ",
                                     "\r",
                                     "a\r",
                                     "\rb",
                                     "a\rb",
                                     "a\n",
                                     "\n",
                                     "a\nbatch_size=1",
                                     std::string("a\0b", 3),
                                     "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC",
                                     "\xEF\xBB\xBF",
                                     "\xEF\xBB\xBFx",
                                     "None",
                                     "'None'",
                                     "True",
                                     "1",
                                     "-",
                                     "--x",
                                     "a' # b' # c",
                                     "' #'",
                                     "\" #\"",
                                     "\xFF\xFE",
                                     "a'  \t  #",
                                     "a'\r#b",
                                     "a' \n#b",
                                     ""};
  std::mt19937 rng(23);
  const std::vector<std::string> alphabet = {"'",
                                             "\"",
                                             "#",
                                             "\\",
                                             "=",
                                             " ",
                                             "\t",
                                             "\r",
                                             "\n",
                                             std::string(1, '\0'),
                                             "a",
                                             "\xC3\xA9",
                                             "\xEF\xBB\xBF",
                                             "None",
                                             "/"};
  for (int i = 0; i < 3000; ++i) {
    std::string v;
    for (int n = rng() % 9; n > 0; --n) v += alphabet[rng() % alphabet.size()];
    values.push_back(v);
  }
  auto closes_early = [](const std::string& v, char q) {
    for (size_t j = v.find(q); j != std::string::npos; j = v.find(q, j + 1)) {
      const size_t next = v.find_first_not_of(" \t\r\n", j + 1);
      if (next != j + 1 && next != std::string::npos && v[next] == '#') return true;
    }
    return false;
  };
  int refused = 0;
  for (const std::string& v : values) {
    HParams hp;
    hp.train_dir = v;
    hp.checkpoint_exclude_scopes = v;
    try {
      validate(hp);
    } catch (const ConfigError& e) {
      ++refused;
      const bool must = v.find('\n') != std::string::npos || v.find('\0') != std::string::npos ||
                        (closes_early(v, '\'') && closes_early(v, '"'));
      EXPECT_TRUE(must) << "refused a writable value " << ::testing::PrintToString(v) << ": "
                        << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find("checkpoint_exclude_scopes: '"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      continue;
    }
    const std::string text = format_hparams(hp);
    LoadResult r;
    try {
      r = load({"--config", write("awkward.cfg", text)});
    } catch (const ConfigError& e) {
      ADD_FAILURE() << ::testing::PrintToString(v) << " does not reload: " << e.what();
      continue;
    }
    EXPECT_EQ(r.hp.train_dir, v) << ::testing::PrintToString(v);
    EXPECT_EQ(r.hp.checkpoint_exclude_scopes, v) << ::testing::PrintToString(v);
    EXPECT_EQ(format_hparams(r.hp), text) << ::testing::PrintToString(v);
  }
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, static_cast<int>(values.size()));
  // Length: a value fits a line (the reader's limit is 64 KiB), and all of
  // them together a file (4 MiB).
  HParams hp;
  hp.train_dir = std::string(config::kMaxValueBytes, 'x') + "' #";
  EXPECT_NE(error_of([&] { validate(hp); }).find("train_dir: 'xxx"), std::string::npos);
  hp.train_dir.resize(config::kMaxValueBytes);
  hp.train_dir.back() = '#';
  validate(hp);
  EXPECT_EQ(load({"--config", write("long.cfg", format_hparams(hp))}).hp.train_dir, hp.train_dir);
  const std::string token = config::quote_if_needed(hp.train_dir);
  for (const config::KeySpec& spec : config::key_table()) {
    if (config::string_value(spec, hp) && spec.choices.empty())
      EXPECT_EQ(config::assign_value(spec, token, &hp), "") << spec.name;
  }
  // Every free string key at the longest value still fits a file.
  validate(hp);
  EXPECT_EQ(format_hparams(load({"--config", write("longest.cfg", format_hparams(hp))}).hp),
            format_hparams(hp));
}

// The command-line spelling of the issue: the effective value (outer quotes
// of the flag removed) is what config.cfg keeps.
TEST_F(HParamsTest, CommandLineValueWithQuoteAndHashRoundTrips) {
  EXPECT_EQ(config::quote_value(std::string("a\nb\r\t\0\x7f", 7)), "'a\\nb\\r\\t\\x00\\x7f'");
  LoadResult first = load({"--train_dir=/runs/qa' #b"});
  EXPECT_EQ(first.hp.train_dir, "/runs/qa' #b");
  LoadResult again = load({"--config", write("qa.cfg", format_hparams(first.hp))});
  EXPECT_EQ(again.hp.train_dir, "/runs/qa' #b");
  try {
    load({"--train_dir=/runs/a\nbatch_size=1"});
    ADD_FAILURE() << "a line feed in a value was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("command line: train_dir: "), std::string::npos)
        << e.what();
  }
}

// What the workers of a job compare at rendezvous.
TEST_F(HParamsTest, JobSettingsLeaveOutPerRankKeysOnly) {
  for (const std::string& k : config::per_rank_keys()) EXPECT_NE(config::find_key(k), nullptr) << k;
  HParams a, b;
  b.task_index = 3;
  b.device = "cpu:1";
  b.train_dir = "/elsewhere";
  b.dataset_dir = "/data/here";
  b.intra_op_parallelism_threads = 7;
  b.num_preprocessing_threads = 2;
  b.tls_ca_file = "ca.pem";
  b.ps_hosts = "ps:2222";  // an ignored key has no effect to disagree on
  EXPECT_EQ(config::job_settings(a), config::job_settings(b));
  EXPECT_EQ(config::describe_differences(config::job_settings(a), config::job_settings(b)), "");
  b.learning_rate = 0.1;
  b.optimizer = "adam";
  b.num_classes = 5;
  const std::string diff =
      config::describe_differences(config::job_settings(b), config::job_settings(a));
  EXPECT_EQ(diff,
            "learning_rate='0.1' (rank 0: '0.01'), num_classes='5' (rank 0: 'None'), "
            "optimizer='adam' (rank 0: 'rmsprop')");
  EXPECT_EQ(config::describe_differences("a=1\nb=2\nc=3\n", "a=0\nb=0\nc=0\n", 2),
            "a='1' (rank 0: '0'), b='2' (rank 0: '0') and 1 more");
  // A key only one side knows (another version of the binary).
  EXPECT_EQ(config::describe_differences("a=1\nnew=2\n", "a=1\n"), "new='2' (rank 0: (not a key))");
  EXPECT_EQ(config::describe_differences("a=1\n", "a=1\nold=2\n"), "old=(not a key) (rank 0: '2')");
}

TEST_F(HParamsTest, ClosestKey) {
  EXPECT_EQ(closest_key("learing_rate"), "learning_rate");
  EXPECT_EQ(closest_key("Batch_Size"), "batch_size");
  EXPECT_EQ(closest_key("enable_paisra"), "enable_paisoar");
  EXPECT_EQ(closest_key("checkpointdir"), "train_dir");  // via its alias
  EXPECT_EQ(closest_key("completely_unrelated"), "");
}

TEST_F(HParamsTest, HelpListsEveryGroupAndKey) {
  std::string help = format_help("train_image_classifier", "--config FILE");
  EXPECT_EQ(help.rfind("usage: train_image_classifier --config FILE\n", 0), 0u);
  for (const char* title : {"Dataset:", "Preprocessing:", "Model:", "Learning rate:", "Optimizer:",
                            "Log:", "Performance:", "Cluster:", "I/O:"}) {
    EXPECT_NE(help.find(std::string("\n") + title + "\n"), std::string::npos) << title;
  }
  for (const config::KeySpec& spec : config::key_table()) {
    EXPECT_NE(help.find("--" + std::string(spec.name) + " ("), std::string::npos) << spec.name;
  }
  EXPECT_NE(help.find("--ps_hosts (str; default: None) (ignored)"), std::string::npos);
  EXPECT_NE(help.find("default: None (from the dataset; FastNN: 100)"), std::string::npos);
  EXPECT_NE(help.find("--enable_paisora -> --enable_paisoar"), std::string::npos);
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

// Every committed config loads without a warning (the loader validates).
TEST_F(HParamsTest, EveryCommittedConfigLoads) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(FASTNN_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".cfg") continue;
    ++n;
    LoadResult r;
    EXPECT_EQ(error_of([&] { r = load({"--config", e.path().string()}); }), "") << e.path();
    EXPECT_TRUE(r.warnings.empty()) << e.path() << ": " << r.warnings.front();
  }
  EXPECT_GE(n, 8);
}

// configs/imagenet_gpu.cfg as its header states: CUDA or exit 2, the learning
// rate of the global batch its comment states (8 GPUs), a linear warmup
// over 5 epochs, and 90 epochs ending the run.
TEST_F(HParamsTest, ImagenetGpuConfigIsGoyalsRecipeOnCuda) {
  const HParams hp =
      load({"--config", std::string(FASTNN_SOURCE_DIR) + "/configs/imagenet_gpu.cfg"}).hp;
  EXPECT_EQ(hp.device, "cuda");
  EXPECT_DOUBLE_EQ(hp.learning_rate, 0.1 * (8 * hp.batch_size) / 256);
  EXPECT_EQ(hp.warmup_scheme, "linear");
  EXPECT_EQ(hp.warmup_epochs, 5.0);
  EXPECT_EQ(hp.num_epochs, 90);
  EXPECT_TRUE(stop_from_num_epochs(hp));
  EXPECT_EQ(hp.num_epochs_per_decay, 30.0);
}

TEST_F(HParamsTest, MarkdownAndDocsMentionEveryKey) {
  std::string md = format_hparams_markdown();
  std::ifstream in(std::string(FASTNN_SOURCE_DIR) + "/docs/hyperparameters.md");
  ASSERT_TRUE(in) << "docs/hyperparameters.md is missing";
  std::stringstream docs;
  docs << in.rdbuf();
  for (const config::KeySpec& spec : config::key_table()) {
    std::string cell = "`" + std::string(spec.name) + "`";
    EXPECT_NE(md.find(cell), std::string::npos) << spec.name;
    EXPECT_NE(docs.str().find(cell), std::string::npos) << spec.name;
  }
  for (const config::Alias& a : config::alias_table()) {
    EXPECT_NE(docs.str().find("`" + std::string(a.alias) + "`"), std::string::npos) << a.alias;
  }
  EXPECT_NE(docs.str().find(md), std::string::npos)
      << "docs/hyperparameters.md's key tables are out of date: run "
         "scripts/update_hparams_doc.sh";
}

}  // namespace
}  // namespace fastnn
