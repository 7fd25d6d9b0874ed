#include "src/train/signals.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "fastnn/errors.h"

namespace fastnn::train {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_saved = 0;

void say(const char* text) {
  for (size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void on_stop_signal(int sig) {
  if (g_signal == 0) {
    g_signal = sig;
    return;
  }
  // Only async-signal-safe calls here (write, strlen, _exit).
  const int first = g_signal;
  const int code = g_saved ? (first == SIGINT ? kExitSigint : kExitSigterm) : kExitStoppedUnsaved;
  say(program_invocation_short_name);
  say(sig == SIGINT ? ": stopped: a second SIGINT " : ": stopped: a second SIGTERM ");
  say(g_saved ? "after the final checkpoint was written (exit "
              : "before the final checkpoint was written; the last periodic checkpoint is "
                "intact (exit ");
  say(code == kExitSigint ? "130)\n" : code == kExitSigterm ? "143)\n" : "6)\n");
  ::_exit(code);
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
