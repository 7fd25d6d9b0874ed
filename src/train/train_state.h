// Everything one replica holds, listed once (TrainState::entries): model
// variables (BatchNorm moving statistics included), optimizer slots, moving
// averages, global step, input position, loss scale and the RNG. The same
// list goes to a checkpoint, comes back from one, is broadcast from rank 0
// when a job starts (all but the RNG), and moves to a device.
//
// Checkpoint keys:
//   model/<tf name>                            variables and BN statistics
//   model/<tf name>/ExponentialMovingAverage   moving averages (EMA on)
//   optimizer/<tf name>/<Slot>                 optimizer slots
//   global_step, input/batches_consumed        int64 counters
//   loss_scale/scale (f64), loss_scale/good_steps (i64)
//   rng/torch_cpu                              LibTorch's CPU generator
//   rng/torch_cuda                             the GPU's generator (GPU runs)
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/classifier.h"
#include "src/optim/optimizers.h"
#include "src/train/loss_scale.h"
#include "src/train/moving_averages.h"

namespace fastnn::train {

using TensorMap = std::map<std::string, torch::Tensor>;

/// "model/<tf name>": a model variable's checkpoint key.
std::string model_key(const std::string& tf_name);
/// A variable's moving average (TF's slot name).
std::string ema_key(const std::string& tf_name);

/// How restore_model treats the checkpoint.
struct RestoreOptions {
  /// Variables whose name starts with one of these (comma list) are left
  /// as initialized (TF-slim's checkpoint_exclude_scopes).
  std::string exclude_scopes;
  /// Skip variables the checkpoint lacks instead of failing.
  bool ignore_missing = false;
  /// Read "<var>/ExponentialMovingAverage" where the checkpoint has it.
  bool use_moving_averages = false;
};

/// Whether restore_model reads the shadows of `ckpt` (from `path`) into
/// `model`, by `choice`. Throws ConfigError (kUse) naming the trainable
/// variables without a shadow.
bool use_moving_averages(models::ClassifierImpl& model, const TensorMap& ckpt,
                         const std::string& path, MovingAverages choice);

/// Copies the "model/..." tensors of a checkpoint into `model`; returns the
/// number restored. Throws ConfigError naming every missing or mis-shaped
/// variable (with a hint about checkpoint_exclude_scopes).
int restore_model(models::ClassifierImpl& model, const TensorMap& ckpt, const std::string& path,
                  const RestoreOptions& options = {});

/// One part of a replica's state, keyed as in a checkpoint.
struct StateEntry {
  enum class Kind {
    kVariable,       // model variable or BatchNorm statistic (live tensor)
    kSlot,           // optimizer slot (live tensor)
    kMovingAverage,  // EMA shadow (live tensor)
    kCounter,        // int64 counter, a 0-d copy (written back by set_counters)
    kLossScale,      // the dynamic loss scale, a 0-d float64 copy (idem)
    kRng,            // a generator's state (checkpointed, never broadcast)
  };
  std::string key;
  torch::Tensor tensor;
  Kind kind;
};

class TrainState {
 public:
  /// The state of `model`, `optimizer` and `scaler` (all must outlive
  /// this). `moving_average_decay` set: shadows start as copies of the
  /// variables.
  TrainState(models::ClassifierImpl& model, optim::Optimizer& optimizer, LossScaler& scaler,
             std::optional<double> moving_average_decay);

  /// Updates applied so far (TF's global_step).
  int64_t step = 0;
  /// Batches taken from the input pipeline (its position on resume).
  int64_t batches_consumed = 0;

  /// The one list of everything this replica holds, in a fixed order
  /// (the same on every rank): what a checkpoint saves and restores, what
  /// rank 0 broadcasts and what moves to a device all walk it.
  std::vector<StateEntry> entries() const;
  /// Everything, keyed as in a checkpoint.
  TensorMap to_checkpoint() const;
  /// Restores everything from a checkpoint of this run. Throws ConfigError
  /// when the optimizer slots are missing (another optimizer), DataError
  /// when a counter is missing. Moving averages the checkpoint lacks start
  /// from the variables; the loss scale is restored when scaling is dynamic.
  void from_checkpoint(const TensorMap& ckpt, const std::string& path);
  /// Makes this replica equal to rank 0's: `broadcast` overwrites the
  /// tensors it is given with rank 0's values (one fixed order on every
  /// rank). The RNG is not sent: every rank seeds it alike.
  void broadcast_from_chief(
      const std::function<void(const std::vector<torch::Tensor>&)>& broadcast);
  /// Moves variables, slots and moving averages to `device` in place.
  void to(const torch::Device& device);

  /// TF's ExponentialMovingAverage.apply with num_updates (no-op without
  /// moving_average_decay).
  void update_moving_averages();
  /// Exchanges every variable's value with its moving average (no-op
  /// without moving_average_decay); a second call restores both exactly.
  /// Evaluation during training uses it to evaluate the averages, as
  /// eval_image_classifier does with a checkpoint that has them.
  void swap_moving_averages();
  bool has_moving_averages() const { return !ema_.empty(); }

 private:
  /// The counters and loss scale from entries() (after a restore or a
  /// broadcast wrote into their 0-d copies).
  void set_counters(const std::vector<StateEntry>& entries);
  /// Sets the GPU generator from a restored checkpoint once on a GPU.
  void restore_cuda_rng();

  models::ClassifierImpl& model_;
  optim::Optimizer& optimizer_;
  LossScaler& scaler_;
  std::optional<double> moving_average_decay_;
  std::vector<std::pair<models::NamedVariable, torch::Tensor>> ema_;
  torch::Device device_{torch::kCPU};
  /// rng/torch_cuda of the restored checkpoint, until the state is on a GPU.
  torch::Tensor cuda_rng_;
};

}  // namespace fastnn::train
