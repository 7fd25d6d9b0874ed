#include "src/train/signals.h"

#include <unistd.h>

#include <csignal>

#include "fastnn/errors.h"

namespace fastnn::train {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_saved = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_signal == 0) {
    g_signal = sig;
    return;
  }
  // Only async-signal-safe calls here.
  const int first = g_signal;
  ::_exit(g_saved ? (first == SIGINT ? kExitSigint : kExitSigterm) : kExitStoppedUnsaved);
}

}  // namespace

void install_stop_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

int stop_signal() { return g_signal; }

void mark_state_saved() { g_saved = 1; }

void clear_stop_signal() { g_signal = 0; }

}  // namespace fastnn::train
