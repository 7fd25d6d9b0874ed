// Whole-file reads and crash-safe writes (temp file + fsync + rename), used
// for TFRecord shards, checkpoints and small metadata files.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn::io {

/// Where an output path leads once its symbolic links are followed, and
/// whether it is written through (a character device or a FIFO) rather than
/// replaced (a regular file, or nothing yet). Throws DataError naming PATH
/// for a directory, a block device, a socket or a symlink loop.
struct OutputTarget {
  std::string path;
  bool write_through = false;
};
OutputTarget resolve_output(const std::string& path);

/// Streams bytes into TARGET.tmp-<pid> in the same directory, TARGET being
/// PATH with its symbolic links followed (a link keeps pointing where it
/// did); commit() makes them appear at TARGET atomically (readers see the
/// old file or the whole new one, never a prefix). Dropping the writer
/// without commit() removes the temporary file. An existing character
/// device or FIFO (/dev/null, /dev/stdout, a pipe) is written through,
/// unbuffered by the kernel and without atomicity; a FIFO nobody reads is
/// refused, as are the kinds resolve_output() refuses. All errors throw
/// DataError naming PATH.
class AtomicFileWriter {
 public:
  /// Creates (truncates) the temporary file.
  explicit AtomicFileWriter(std::string path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends bytes (buffered, 1 MiB). REQUIRES: commit() not yet called.
  void append(std::string_view bytes);

  /// Flushes, fsyncs, renames onto the final path and fsyncs the directory.
  void commit();

  /// The final path.
  const std::string& path() const { return path_; }

 private:
  void write_all(const char* data, size_t n);
  void flush_buffer();
  [[noreturn]] void fail(const char* what, int err) const;

  std::string path_;
  std::string final_path_;
  std::string tmp_path_;
  bool write_through_ = false;
  std::string buffer_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Replaces the file at path with bytes atomically (see AtomicFileWriter).
void write_file_atomic(const std::string& path, std::string_view bytes);

/// The most read_file() takes from a source without a size (a pipe, a
/// character device, a /proc file) unless its caller says otherwise.
inline constexpr size_t kReadFileLimit = size_t{256} << 20;

/// How long read_file() waits for a FIFO's writer to write.
inline constexpr int kFifoWaitMs = 60000;

/// Reads a whole file: a regular file up to its size, anything else (a
/// pipe, a character device) up to max_bytes; a FIFO that nobody writes
/// within fifo_wait_ms is an error, not a wait without end. Throws
/// DataError "cannot open/read 'PATH': REASON", for a directory too, and
/// when a sizeless source has more than max_bytes.
std::string read_file(const std::string& path, size_t max_bytes = kReadFileLimit,
                      int fifo_wait_ms = kFifoWaitMs);

/// Throws DataError "cannot read 'PATH': it is KIND, not WHAT" when PATH
/// (its symbolic links followed) is there and is not a regular file: for
/// inputs that only a file can be (a checkpoint). A missing PATH passes.
void require_regular_file(const std::string& path, const std::string& what);

/// True for the name of an AtomicFileWriter temporary ("<anything>.tmp-<pid>"):
/// never data, never a checkpoint.
bool is_temporary_name(const std::string& filename);

/// Removes the temporaries in `dir` (not recursive) left by processes that
/// no longer exist (SIGKILL, a lost machine); a live process's are kept.
/// Returns the names removed. Errors reading `dir` are ignored.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

}  // namespace fastnn::io
