// The second stop signal ends the process at once, and says so on stderr in
// the one-line form of every other exit (not exit 6 with nothing printed).
#include "src/train/signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

namespace fastnn::train {
namespace {

struct Ended {
  int exit_code = -1;
  std::string stderr_text;
};

// A child that installs the handlers, optionally marks its state saved, and
// gets `sig` twice.
Ended two_signals(int sig, bool saved) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    install_stop_signals();
    if (saved) mark_state_saved();
    ::raise(sig);
    ::raise(sig);
    ::_exit(99);
  }
  ::close(fds[1]);
  Ended e;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) e.stderr_text.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return e;
}

TEST(StopSignals, ASecondSignalBeforeTheFinalCheckpointExits6AndSaysSo) {
  const Ended e = two_signals(SIGTERM, false);
  EXPECT_EQ(e.exit_code, 6);
  EXPECT_EQ(e.stderr_text, std::string(program_invocation_short_name) +
                               ": stopped: a second SIGTERM before the final checkpoint was "
                               "written; the last periodic checkpoint is intact (exit 6)\n");
}

TEST(StopSignals, ASecondSignalAfterTheFinalCheckpointKeepsTheFirstsCode) {
  const Ended e = two_signals(SIGINT, true);
  EXPECT_EQ(e.exit_code, 130);
  EXPECT_EQ(e.stderr_text,
            std::string(program_invocation_short_name) +
                ": stopped: a second SIGINT after the final checkpoint was written (exit 130)\n");
}

}  // namespace
}  // namespace fastnn::train
