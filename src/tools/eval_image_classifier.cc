// eval_image_classifier --config FILE --checkpoint_path PATH [--KEY=VALUE ...]
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "fastnn/errors.h"
#include "src/log/log.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "src/train/evaluator.h"
#include "src/train/process_setup.h"

namespace {

void print_result(const fastnn::train::EvalResult& r) {
  std::printf("eval %s: %lld samples, global_step %lld%s\n", r.split.c_str(),
              static_cast<long long>(r.samples), static_cast<long long>(r.global_step),
              r.moving_averages ? ", moving-average weights" : "");
  std::printf("Accuracy = %.4f (%lld/%lld)\nRecall_5 = %.4f\nLoss = %.4f\n", r.top1,
              static_cast<long long>(r.top1_correct), static_cast<long long>(r.samples), r.top5,
              r.loss);
  for (size_t c = 0; c < r.class_total.size(); ++c) {
    if (r.class_total[c] == 0) continue;
    const std::string name = c < r.class_names.size() ? r.class_names[c] : "";
    std::printf("  class %zu %-12s %.4f (%lld/%lld)\n", c, name.c_str(),
                static_cast<double>(r.class_correct[c]) / r.class_total[c],
                static_cast<long long>(r.class_correct[c]),
                static_cast<long long>(r.class_total[c]));
  }
  std::printf("eval_result %s\n", fastnn::train::eval_result_json(r).c_str());
  std::fflush(stdout);
}

// TF-slim's eval_image_classifier evaluates --dataset_split_name. Given on
// this tool's command line (a config's dataset_split_name is the training
// split), it names the split to evaluate, unless eval_split_name is given
// too.
fastnn::HParams split_to_evaluate(fastnn::HParams hp) {
  const bool split_given = hp.where("dataset_split_name") == "command line";
  if (!split_given || hp.dataset_split_name == hp.eval_split_name) return hp;
  if (hp.where("eval_split_name") == "default") {
    hp.eval_split_name = hp.dataset_split_name;
    hp.sources["eval_split_name"] = "command line, as dataset_split_name";
  } else {
    fastnn::log::warning() << "dataset_split_name=" << hp.dataset_split_name
                           << " is not evaluated: eval_split_name=" << hp.eval_split_name << " ("
                           << hp.where("eval_split_name") << ") names the split to evaluate";
  }
  return hp;
}

}  // namespace

int main(int argc, char** argv) {
  return fastnn::train::tool_main(
      argc, argv, "eval_image_classifier",
      "--config FILE --checkpoint_path PATH [--eval_split_name=test] "
      "[--eval_interval_secs=N [--eval_timeout_secs=N]] [--KEY=VALUE ...]",
      [](fastnn::LoadResult& args) {
        fastnn::HParams hp = split_to_evaluate(args.hp);
        std::string path = hp.checkpoint_path.empty() ? hp.train_dir : hp.checkpoint_path;
        if (path.empty()) {
          throw fastnn::ConfigError("checkpoint_path: not set (a checkpoint file or a train_dir)");
        }
        fastnn::train::configure_threads(hp);
        if (hp.eval_interval_secs > 0) {
          // The train_dir may not exist yet: the loop waits for it.
          if (std::filesystem::is_regular_file(path)) {
            throw fastnn::ConfigError(
                "eval_interval_secs: the evaluation loop needs a train_dir, not the "
                "file '" +
                path + "'");
          }
          return fastnn::train::evaluation_loop(
              fastnn::train::eval_loop_options(hp), path,
              [&hp](const std::string& checkpoint) {
                return fastnn::train::evaluate_checkpoint(hp, checkpoint);
              },
              print_result);
        }
        const auto result = fastnn::train::evaluate_checkpoint(hp, path);
        print_result(result);
        if (!hp.eval_dir.empty()) fastnn::train::write_eval_summary(hp.eval_dir, result);
        return 0;
      });
}
