// TFRecord files, byte-compatible with TensorFlow's (uncompressed):
//
//   uint64 length        little-endian
//   uint32 length_crc    little-endian, mask_crc(crc32c(length bytes))
//   byte   data[length]
//   uint32 data_crc      little-endian, mask_crc(crc32c(data))
//
// See docs/io.md for the error messages and the skip policy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fastnn/byte_source.h"

namespace fastnn::io {

class AtomicFileWriter;


/// Bytes of framing around each record: 8 + 4 before the data, 4 after.
constexpr uint64_t kRecordOverheadBytes = 16;

/// Counters kept by a TFRecordReader.
struct RecordStats {
  /// Records returned by next().
  uint64_t records = 0;
  /// Corrupt records dropped (skip policy only).
  uint64_t skipped = 0;
  /// Bytes of the source not returned as records because of corruption,
  /// framing included (skip policy only).
  uint64_t skipped_bytes = 0;
  /// Of `skipped`: records cut short by the end of the source.
  uint64_t skipped_truncated = 0;
};

/// Reads records one by one from a byte source.
///
/// Fail policy (skip_corrupt = false): any corruption throws DataError
/// "NAME: record I at offset O: REASON" (I counts records from 0, O is the
/// byte offset of the record's length field).
/// Skip policy: a data-CRC mismatch drops that record and reading goes on; a
/// length-CRC mismatch or a truncation cannot be resynchronised, so it counts
/// as one skipped record and ends the source. I/O errors throw either way.
class TFRecordReader {
 public:
  /// Maximum number of entries kept in skip_reasons().
  static constexpr size_t kMaxSkipReasons = 100;

  /// Takes ownership of src; skip_corrupt selects the skip policy.
  explicit TFRecordReader(std::unique_ptr<ByteSource> src,
                          bool skip_corrupt = false);

  /// Stores the next record in *record (reusing its capacity) and returns
  /// true, or returns false at the end of the source.
  bool next(std::string* record);

  /// Byte offset of the record last returned by next().
  uint64_t record_offset() const {
    return record_offset_;
  }

  /// Records read and skipped so far.
  const RecordStats& stats() const {
    return stats_;
  }

  /// Why records were skipped, one message per skip, in the fail policy's
  /// wording; at most kMaxSkipReasons entries.
  const std::vector<std::string>& skip_reasons() const {
    return skip_reasons_;
  }

  /// The source's name.
  const std::string& name() const {
    return src_->name();
  }

 private:
  size_t read_full(void* dst, size_t n);
  bool read_data(uint64_t length, std::string* record);
  std::string describe(uint64_t index,
                       uint64_t offset,
                       const std::string& reason) const;
  void skip(std::string message, uint64_t bytes);
  void stop(uint64_t index, uint64_t offset, const std::string& reason);

  std::unique_ptr<ByteSource> src_;
  bool skip_corrupt_;
  bool done_ = false;
  uint64_t offset_ = 0;
  uint64_t index_ = 0;
  uint64_t record_offset_ = 0;
  RecordStats stats_;
  std::vector<std::string> skip_reasons_;
};

/// Writes a TFRecord file atomically: records go to PATH.tmp-<pid>, and
/// close() renames it onto PATH. Without close() the file never appears.
/// Throws DataError naming PATH on I/O errors (e.g. a full disk).
class TFRecordWriter {
 public:
  /// Creates PATH.tmp-<pid>; throws DataError if it cannot.
  explicit TFRecordWriter(const std::string& path);
  /// Removes the temporary file unless close() succeeded.
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  /// Appends one record. REQUIRES: close() not yet called.
  void write(std::string_view record);

  /// Flushes, fsyncs and renames onto PATH. Later calls do nothing.
  void close();

 private:
  std::unique_ptr<AtomicFileWriter> file_;
  bool closed_ = false;
};

/// The framed bytes of one record (header, data, data CRC), as written to a
/// TFRecord file.
std::string frame_record(std::string_view data);

}  // namespace fastnn::io
