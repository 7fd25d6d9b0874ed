#include "src/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <cstdlib>

#include "src/config/value_parse.h"

#if FASTNN_WITH_CUDA
#include "src/cuda/cuda_device.h"
#endif

namespace fastnn::train {
namespace {

// The device, with its memory where LibTorch can tell.
std::string describe_device(const torch::Device& device) {
#if FASTNN_WITH_CUDA
  if (device.is_cuda()) {
    return device.str() + " (" + cuda::describe(device) + "; " + cuda::allocator_use(device) + ")";
  }
#endif
  return device.str();
}

// The first line of LibTorch's message (its allocator's advice follows on
// later lines), at most 400 characters.
std::string first_line(const c10::Error& e) {
  std::string s = e.what_without_backtrace();
  s = s.substr(0, s.find('\n'));
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

}  // namespace

OutOfMemoryError out_of_memory_error(const c10::OutOfMemoryError& e, const torch::Device& device,
                                     const std::string& doing, const std::string& batch_key) {
  std::string hint = "lower " + batch_key;
  if (device.is_cuda()) {
    hint +=
        ", or use less memory per image: use_fp16=True (float16, or bfloat16 with "
        "mixed_precision=bf16) and data_format=NHWC (channels-last)";
  }
  return OutOfMemoryError("out of memory on " + describe_device(device) + " " + doing + ": " +
                          hint + ". LibTorch: " + first_line(e));
}

}  // namespace fastnn::train
