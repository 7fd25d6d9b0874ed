// SIGINT/SIGTERM handling: the first signal asks the loop to checkpoint
// and exit (130 / 143). A second one ends the process at once: with the
// first signal's code when the final checkpoint is already written, else
// with kExitStoppedUnsaved (6), so a script never mistakes it for a run
// that saved its state.
#pragma once

namespace fastnn::train {

/// Installs the handlers.
void install_stop_signals();
/// The signal received (SIGINT/SIGTERM), or 0.
int stop_signal();
/// Nothing is left unsaved: the checkpoint the first signal asked for is
/// on disk (or there is nothing to save, e.g. the evaluation loop).
void mark_state_saved();
/// Forgets a received stop signal (tests that send one to themselves).
void clear_stop_signal();

}  // namespace fastnn::train
