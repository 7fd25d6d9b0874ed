// Threads a process may still start. A container's process limit
// (`ulimit -u`, RLIMIT_NPROC: every thread of the user counts) or a
// cgroup's pids.max makes thread creation fail with EAGAIN; the tools then
// start fewer threads, or stop with a message naming the limit, instead of
// aborting when a half-built thread pool unwinds.
#pragma once

#include <string>
#include <system_error>

namespace fastnn::io {

/// How many more threads this process can start now, counting up to `cap`
/// (it starts them, each on a 1 MiB stack, and ends them again).
int startable_threads(int cap);

/// True for the error std::thread throws when the limit is reached.
bool is_thread_limit(const std::system_error& e);

/// "<what>: cannot start a thread: the limit on this user's processes and
/// threads is reached (ulimit -u N, or the container's pids limit); <advice>"
/// (without "<what>: " when `what` is empty).
std::string thread_limit_message(const std::string& what, const std::string& advice);

}  // namespace fastnn::io
