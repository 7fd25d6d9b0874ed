// The choice of weights a restore for evaluation makes, apart from
// train_state.h so that the evaluator's header stays free of LibTorch's.
#pragma once

namespace fastnn::train {

/// Which weights an evaluation, a classification or an export restores.
/// TF-slim restores the "<var>/ExponentialMovingAverage" shadows only when
/// moving_average_decay is set, and then needs every one.
enum class MovingAverages {
  /// moving_average_decay not given: the shadows when the checkpoint has
  /// one for every trainable variable; the raw weights, with a warning, when
  /// it has some only.
  kAuto,
  /// moving_average_decay set: the shadows, each one required.
  kUse,
  /// moving_average_decay=None given: the raw weights.
  kRaw,
};

}  // namespace fastnn::train
