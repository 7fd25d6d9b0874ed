// Whole-file reads and crash-safe writes (temp file + fsync + rename), used
// for TFRecord shards, checkpoints and small metadata files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fastnn::io {

/// Streams bytes into PATH.tmp-<pid> in the same directory; commit() makes
/// them appear at PATH atomically (readers see the old file or the whole new
/// one, never a prefix). Dropping the writer without commit() removes the
/// temporary file. All errors throw DataError naming PATH.
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
  std::string tmp_path_;
  std::string buffer_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Replaces the file at path with bytes atomically (see AtomicFileWriter).
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Reads a whole file. Throws DataError "cannot open/read 'PATH': REASON".
std::string read_file(const std::string& path);

/// True for the name of an AtomicFileWriter temporary ("<anything>.tmp-<pid>"):
/// never data, never a checkpoint.
bool is_temporary_name(const std::string& filename);

/// Removes the temporaries in `dir` (not recursive) left by processes that
/// no longer exist (SIGKILL, a lost machine); a live process's are kept.
/// Returns the names removed. Errors reading `dir` are ignored.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

}  // namespace fastnn::io
