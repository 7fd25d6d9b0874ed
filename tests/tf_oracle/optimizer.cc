// tf_oracle_optimizer: this port's optimizer (create_optimizer, FastNN's
// keys) applied to given gradients, and its learning-rate schedule, for the
// TensorFlow oracle (tests/tf_oracle/optimizers.py).
//
//   tf_oracle_optimizer --optimizer=NAME [--KEY=VALUE ...] --learning_rate=LR
//       --init=V0.npy --grads=G.npy --output=OUT.npy --slots_output=S.npy
//       [--variable_name=NAME]
// V0: float32 [K], the variable's start; G: float32 [T,K], one gradient per
// step; OUT: the variable after each step [T,K]; S: the slots after the last
// step [S,K], in slots() order, their names printed one per line on stdout
// (scalar slots, Adam's beta powers, printed as NAME=VALUE instead). The
// variable is named NAME (default "v"; adamweightdecay decays by name).
// Every step uses --learning_rate (give --learning_rate_decay_type=fixed).
//
//   tf_oracle_optimizer [--KEY=VALUE ...] --schedule_steps=N
//       [--samples_per_epoch=N] [--num_workers=N]
// prints the learning rate of steps 0..N-1 (optim::schedule_from_hparams +
// learning_rate_at, as the trainer resolves them), one per line, 17 digits.
#include <torch/torch.h>

#include <iostream>

#include "fastnn/errors.h"
#include "src/optim/learning_rate.h"
#include "src/optim/optimizers.h"
#include "src/tools/tool_main.h"
#include "src/train/builder.h"
#include "tests/tf_oracle/npy.h"

namespace {

using namespace fastnn;

int print_schedule(LoadResult& args) {
  auto count = [&](const char* key, int64_t fallback) {
    return args.extras.count(key) ? std::stoll(args.extras.at(key)) : fallback;
  };
  const auto schedule =
      train::schedule_options(args.hp, count("samples_per_epoch", 0), count("num_workers", 1));
  std::cout.precision(17);
  for (int64_t s = 0; s < count("schedule_steps", 0); ++s) {
    std::cout << optim::learning_rate_at(schedule, s) << "\n";
  }
  return 0;
}

int run_optimizer(LoadResult& args) {
  for (const char* k : {"init", "grads", "output", "slots_output"}) {
    if (!args.extras.count(k)) throw ConfigError(std::string("--") + k + " is required");
  }
  const torch::Tensor v0 = test_npy::read(args.extras.at("init"));
  const torch::Tensor grads = test_npy::read(args.extras.at("grads"));
  auto var = v0.clone().to(torch::kFloat32);
  const std::string name =
      args.extras.count("variable_name") ? args.extras.at("variable_name") : "v";
  auto opt = optim::create_optimizer(train::optimizer_options(args.hp), {{name, var}});
  std::vector<torch::Tensor> trajectory;
  for (int64_t t = 0; t < grads.size(0); ++t) {
    var.mutable_grad() = grads[t].clone();
    opt->step(args.hp.learning_rate);
    trajectory.push_back(var.detach().clone());
  }
  test_npy::write(args.extras.at("output"), torch::stack(trajectory));
  // Per-variable slots go to S.npy; scalar ones (Adam's beta powers)
  // are printed as NAME=VALUE.
  std::vector<torch::Tensor> slots;
  for (const auto& s : opt->slots()) {
    if (s.value.numel() == v0.numel()) {
      std::cout << s.name << "\n";
      slots.push_back(s.value.detach().reshape({-1}).to(torch::kFloat32));
    } else {
      std::cout.precision(17);
      std::cout << s.name << "=" << s.value.to(torch::kFloat64).item<double>() << "\n";
    }
  }
  test_npy::write(args.extras.at("slots_output"),
                  slots.empty() ? torch::zeros({0, v0.numel()}) : torch::stack(slots));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return train::tool_main(
      argc, argv, "tf_oracle_optimizer",
      "--optimizer=NAME --learning_rate=LR --init=V0.npy --grads=G.npy --output=OUT.npy "
      "--slots_output=S.npy [--variable_name=NAME] | [--KEY=VALUE ...] --schedule_steps=N "
      "[--samples_per_epoch=N] [--num_workers=N]",
      [](LoadResult& args) {
        return args.extras.count("schedule_steps") ? print_schedule(args) : run_optimizer(args);
      },
      {"init", "grads", "output", "slots_output", "variable_name", "schedule_steps",
       "samples_per_epoch", "num_workers"});
}
