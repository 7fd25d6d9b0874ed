// SIGINT/SIGTERM handling: the first signal asks the loop to checkpoint
// and exit; a second one terminates at once (default action).
#pragma once

namespace fastnn::train {

/// Installs the handlers.
void install_stop_signals();
/// The signal received (SIGINT/SIGTERM), or 0.
int stop_signal();

}  // namespace fastnn::train
