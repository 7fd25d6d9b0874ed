// An exclusive lock on a directory for the lifetime of a process: dir/.lock
// held with flock(2), released by the kernel when the process ends (also on
// SIGKILL), so a stale lock never needs cleaning up. A train_dir holds one
// per trainer, a sweep's --out directory one per sweep.
#pragma once

#include <string>

namespace fastnn::io {

/// Creates `dir` (and its parents) and locks dir/.lock without waiting.
/// The descriptor returned holds the lock until it is closed; it is not
/// inherited across exec (O_CLOEXEC). `key` names the directory's setting
/// in messages ("train_dir", "--out"), `holder` the kind of process that
/// holds such a lock ("training process", "sweep"). Throws ConfigError:
///   "<key> '<dir>' is in use by another <holder> (it holds <dir>/.lock);
///    use another <key>, or stop that process first",
/// or "<key>: cannot create or use directory ...", "<key>: cannot write in
/// ...", "<key>: cannot lock ...".
int lock_directory(const std::string& dir, const std::string& key, const std::string& holder);

}  // namespace fastnn::io
