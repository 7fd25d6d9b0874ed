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
  /// Corrupt stretches dropped (skip policy only): one per fault, however
  /// many records the stretch held.
  uint64_t skipped = 0;
  /// Bytes of the source not returned as records because of corruption,
  /// framing included (skip policy only).
  uint64_t skipped_bytes = 0;
  /// Of `skipped`: records cut short by the end of the source.
  uint64_t skipped_truncated = 0;
  /// Of `skipped`: records whose header declares more than
  /// max_record_bytes (not read).
  uint64_t skipped_oversized = 0;
};

/// How a TFRecordReader treats corruption.
struct TFRecordReaderOptions {
  /// false: any corruption throws DataError. true: corrupt records are
  /// skipped and counted. Default: false.
  bool skip_corrupt = false;
  /// Skip policy only: a source of which more than this share of the bytes
  /// was skipped throws DataError when its end is reached; 1 never throws.
  /// REQUIRES: in [0, 1]. Default: 0.1.
  double max_skipped_share = 0.1;
  /// A record whose (CRC-valid) header declares more bytes is corrupt: a
  /// DataError, or skipped under the skip policy, before any of it is read.
  /// 0: no limit beyond the source's size. Default: 0.
  uint64_t max_record_bytes = 0;
};

/// Reads records one by one from a byte source.
///
/// Fail policy (skip_corrupt = false): any corruption throws DataError
/// "NAME: record I at offset O: REASON" (I counts records from 0, O is the
/// byte offset of the record's length field).
/// Skip policy: a data-CRC mismatch followed by a valid header drops that
/// record. Any other fault (length CRC, a length past the end, a data-CRC
/// mismatch followed by garbage) resynchronises: the reader scans forward
/// byte by byte from O + 1 for the next offset whose length CRC and data CRC
/// both check out and continues there (or ends the source). Either way the
/// fault counts as one skipped record plus the bytes passed over. At the end
/// of the source, more than max_skipped_share of its bytes skipped throws
/// DataError. I/O errors throw under both policies.
class TFRecordReader {
 public:
  /// Maximum number of entries kept in skip_reasons().
  static constexpr size_t kMaxSkipReasons = 100;

  /// Takes ownership of src. Throws std::invalid_argument if
  /// options.max_skipped_share is outside [0, 1].
  explicit TFRecordReader(std::unique_ptr<ByteSource> src, TFRecordReaderOptions options = {});

  /// Stores the next record in *record (reusing its capacity) and returns
  /// true, or returns false at the end of the source.
  bool next(std::string* record);

  /// Byte offset of the record last returned by next().
  uint64_t record_offset() const { return record_offset_; }

  /// Records read and skipped so far.
  const RecordStats& stats() const { return stats_; }

  /// Why records were skipped, one message per skip, in the fail policy's
  /// wording followed by the bytes skipped; at most kMaxSkipReasons entries.
  const std::vector<std::string>& skip_reasons() const { return skip_reasons_; }

  /// The source's name.
  const std::string& name() const { return src_->name(); }

 private:
  size_t read_full(void* dst, size_t n);
  bool read_data(uint64_t length, std::string* record);
  bool fill(size_t n);
  const unsigned char* ahead(size_t pos) const;
  bool valid_record_at(size_t pos);
  bool framing_intact();
  void resync();
  void finish();
  std::string describe(uint64_t index, uint64_t offset, const std::string& reason) const;
  void skip(std::string message, uint64_t bytes);
  void fault(uint64_t index, uint64_t offset, const std::string& reason, std::string_view header,
             std::string_view data = {}, std::string_view footer = {});

  std::unique_ptr<ByteSource> src_;
  TFRecordReaderOptions options_;
  bool done_ = false;
  /// The source has returned 0 (its end).
  bool eof_ = false;
  /// Bytes taken from src_ (or put back) but not consumed yet:
  /// lookahead_[lookahead_pos_] is the byte at offset_.
  std::string lookahead_;
  size_t lookahead_pos_ = 0;
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

/// "GZIP" or "ZLIB" when a file's first two bytes are those of TensorFlow's
/// compressed TFRecords (TFRecordOptions compression_type: the gzip magic,
/// a zlib header), nullptr otherwise.
const char* compression_of(const unsigned char* first_two_bytes);

}  // namespace fastnn::io
