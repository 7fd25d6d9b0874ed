#include "src/train/signals.h"

#include <csignal>

namespace fastnn::train {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  std::signal(sig, SIG_DFL);
}

}  // namespace

void install_stop_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

int stop_signal() {
  return g_signal;
}

}  // namespace fastnn::train
