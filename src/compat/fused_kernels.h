// The one switch of the CPU kernels of our own (the LeNet blocks, the
// gradient pass): FASTNN_FUSED_KERNELS=0 in the environment turns them off
// and LibTorch's operators run instead, for A/B runs. Read once a process.
#pragma once

#include <cstdlib>
#include <cstring>

namespace fastnn::compat {

inline bool fused_kernels_switched_on() {
  static const bool on = [] {
    const char* v = std::getenv("FASTNN_FUSED_KERNELS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace fastnn::compat
