// Sequential byte sources: the seam between record readers and storage, so
// tests can feed (and corrupt) bytes from memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace fastnn::io {

/// A forward-only stream of bytes with a human-readable name.
class ByteSource {
 public:
  /// Closes the underlying file, if any.
  virtual ~ByteSource();

  /// Copies up to n bytes into dst and returns how many were copied. May
  /// return fewer than n; returns 0 only at end of stream (or when n == 0).
  /// Throws DataError on an I/O error.
  virtual size_t read(void* dst, size_t n) = 0;

  /// Name used in error messages (the path for files).
  virtual const std::string& name() const = 0;
};

/// Opens a file for buffered sequential reading (1 MiB reads).
/// Throws DataError "cannot open 'PATH': REASON".
std::unique_ptr<ByteSource> open_file(const std::string& path);

/// A source that serves `bytes` from memory; `name` appears in errors.
std::unique_ptr<ByteSource> memory_source(std::string bytes, std::string name);

}  // namespace fastnn::io
