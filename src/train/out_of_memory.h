// A device out of memory as a message a user can act on (exit 7), instead
// of LibTorch's exception ending the process as an internal error; and the
// fault seam that tests it without a GPU.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "fastnn/errors.h"

namespace c10 {
class OutOfMemoryError;
}  // namespace c10

namespace fastnn::train {

/// `e` as the error a user reads: "out of memory on cuda:0 (<name, compute
/// capability, total memory>; <allocated, reserved by LibTorch's caching
/// allocator>) <doing>: lower <batch_key>, or ... LibTorch: <its first
/// line>". `doing`: e.g. "training at batch_size=256 (global step 14)";
/// `batch_key`: the hyperparameter to lower (batch_size, eval_batch_size).
OutOfMemoryError out_of_memory_error(const c10::OutOfMemoryError& e, const torch::Device& device,
                                     const std::string& doing, const std::string& batch_key);

}  // namespace fastnn::train
