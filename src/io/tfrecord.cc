#include "fastnn/tfrecord.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"
#include "src/io/crc32c.h"

namespace fastnn::io {
namespace {

// Ends the reason of a record over max_record_bytes (counted apart).
constexpr const char* kOversizedMark = " (max_record_bytes)";

constexpr size_t kHeaderBytes = 12;
constexpr size_t kFooterBytes = 4;
// Record data is read in growing chunks starting here, so a corrupt but
// CRC-valid length cannot make the reader allocate more than the file holds.
constexpr uint64_t kFirstChunkBytes = uint64_t{1} << 20;
// Resynchronisation reads ahead in chunks of at least this size.
constexpr size_t kScanChunkBytes = size_t{64} << 10;

void put_le32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  }
}

void put_le64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  }
}

uint32_t get_le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t get_le64(const unsigned char* p) {
  return uint64_t{get_le32(p)} | uint64_t{get_le32(p + 4)} << 32;
}

void encode_header(uint64_t length, char* out) {
  put_le64(length, out);
  put_le32(mask_crc(crc32c(out, 8)), out + 8);
}

void encode_footer(std::string_view data, char* out) {
  put_le32(mask_crc(crc32c(data.data(), data.size())), out);
}

std::string crc_mismatch(const char* what, uint32_t stored, uint32_t computed) {
  char buf[96];
  std::snprintf(buf, sizeof(buf),
                "%s CRC mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")", what, stored,
                computed);
  return buf;
}

}  // namespace

TFRecordReader::TFRecordReader(std::unique_ptr<ByteSource> src, TFRecordReaderOptions options)
    : src_(std::move(src)), options_(options) {
  if (!(options_.max_skipped_share >= 0 && options_.max_skipped_share <= 1)) {
    throw std::invalid_argument("TFRecordReader: max_skipped_share must be in [0, 1], got " +
                                std::to_string(options_.max_skipped_share));
  }
}

size_t TFRecordReader::read_full(void* dst, size_t n) {
  auto* p = static_cast<char*>(dst);
  size_t got = std::min(n, lookahead_.size() - lookahead_pos_);
  if (got > 0) {
    std::memcpy(p, lookahead_.data() + lookahead_pos_, got);
    lookahead_pos_ += got;
    if (lookahead_pos_ == lookahead_.size()) {
      std::string().swap(lookahead_);  // release a large resync buffer
      lookahead_pos_ = 0;
    }
  }
  while (got < n && !eof_) {
    size_t r = src_->read(p + got, n - got);
    if (r == 0) {
      eof_ = true;
      break;
    }
    got += r;
  }
  offset_ += got;
  return got;
}

bool TFRecordReader::read_data(uint64_t length, std::string* record) {
  record->clear();
  uint64_t have = 0;
  while (have < length) {
    uint64_t chunk = std::min(length - have, std::max(kFirstChunkBytes, have));
    record->resize(static_cast<size_t>(have + chunk));
    size_t got = read_full(&(*record)[have], static_cast<size_t>(chunk));
    have += got;
    if (got < chunk) {
      record->resize(static_cast<size_t>(have));
      return false;
    }
  }
  return true;
}

// Makes n unconsumed bytes available in lookahead_; false if the source ends
// first (lookahead_ then holds all of the rest).
bool TFRecordReader::fill(size_t n) {
  while (lookahead_.size() - lookahead_pos_ < n) {
    if (eof_) {
      return false;
    }
    if (lookahead_pos_ > 0) {
      lookahead_.erase(0, lookahead_pos_);
      lookahead_pos_ = 0;
    }
    const size_t have = lookahead_.size();
    // At least a scan chunk, at most doubling: a false length costs no more
    // memory than the source holds.
    const size_t want = std::clamp(n - have, kScanChunkBytes, std::max(kScanChunkBytes, have));
    lookahead_.resize(have + want);
    size_t got = 0;
    while (got < want) {
      size_t r = src_->read(&lookahead_[have + got], want - got);
      if (r == 0) {
        eof_ = true;
        break;
      }
      got += r;
    }
    lookahead_.resize(have + got);
  }
  return true;
}

const unsigned char* TFRecordReader::ahead(size_t pos) const {
  return reinterpret_cast<const unsigned char*>(lookahead_.data()) + lookahead_pos_ + pos;
}

// Whether a record whose length CRC and data CRC both check out starts pos
// bytes after offset_. REQUIRES: fill(pos + kHeaderBytes).
bool TFRecordReader::valid_record_at(size_t pos) {
  const unsigned char* header = ahead(pos);
  if (get_le32(header + 8) != mask_crc(crc32c(header, 8))) {
    return false;
  }
  const uint64_t length = get_le64(header);
  const size_t room = std::numeric_limits<size_t>::max() - pos - kHeaderBytes - kFooterBytes;
  if (length > room || !fill(pos + kHeaderBytes + static_cast<size_t>(length) + kFooterBytes)) {
    return false;
  }
  const unsigned char* data = ahead(pos + kHeaderBytes);  // fill may move it
  const auto n = static_cast<size_t>(length);
  return get_le32(data + n) == mask_crc(crc32c(data, n));
}

// After a data-CRC mismatch: whether a plausible header (or the end) follows,
// so that only the record's own bytes are bad.
bool TFRecordReader::framing_intact() {
  if (!fill(kHeaderBytes)) {
    return true;  // the end, or a short tail the next header read reports
  }
  const unsigned char* header = ahead(0);
  return get_le32(header + 8) == mask_crc(crc32c(header, 8));
}

// Consumes bytes from offset_ up to the next valid record or the end.
void TFRecordReader::resync() {
  size_t pos = 0;
  for (;; ++pos) {
    if (!fill(pos + kHeaderBytes)) {
      pos = lookahead_.size() - lookahead_pos_;  // too short for a record
      break;
    }
    if (valid_record_at(pos)) {
      break;
    }
  }
  lookahead_pos_ += pos;
  offset_ += pos;
}

// End of the source: enforces max_skipped_share.
void TFRecordReader::finish() {
  done_ = true;
  const uint64_t skipped = stats_.skipped_bytes;
  if (skipped == 0) {
    return;
  }
  const double share = static_cast<double>(skipped) / static_cast<double>(offset_);
  if (share <= options_.max_skipped_share) {
    return;
  }
  char detail[160];
  std::snprintf(detail, sizeof(detail),
                " bytes (%.1f %%) skipped as corrupt, more than "
                "max_skipped_share = %g allows (1 accepts any loss)",
                100 * share, options_.max_skipped_share);
  throw DataError(src_->name() + ": " + std::to_string(skipped) + " of " + std::to_string(offset_) +
                  detail + "; first fault: " + skip_reasons_.front());
}

std::string TFRecordReader::describe(uint64_t index, uint64_t offset,
                                     const std::string& reason) const {
  return src_->name() + ": record " + std::to_string(index) + " at offset " +
         std::to_string(offset) + ": " + reason;
}

void TFRecordReader::skip(std::string message, uint64_t bytes) {
  ++stats_.skipped;
  stats_.skipped_bytes += bytes;
  if (skip_reasons_.size() < kMaxSkipReasons) {
    skip_reasons_.push_back(std::move(message) + "; " + std::to_string(bytes) + " bytes skipped");
  }
}

// A framing fault of the record at offset, of which header + data + footer
// were consumed: throws under the fail policy, else resynchronises from
// offset + 1 and counts one skip.
void TFRecordReader::fault(uint64_t index, uint64_t offset, const std::string& reason,
                           std::string_view header, std::string_view data,
                           std::string_view footer) {
  std::string message = describe(index, offset, reason);
  if (!options_.skip_corrupt) {
    throw DataError(message);
  }
  if (reason.rfind("truncated", 0) == 0) ++stats_.skipped_truncated;
  if (reason.find(kOversizedMark) != std::string::npos) ++stats_.skipped_oversized;
  // Put back what was read of the record except its first byte, and look
  // for the next record from there.
  std::string rest;
  rest.reserve(header.size() - 1 + data.size() + footer.size() +
               (lookahead_.size() - lookahead_pos_));
  rest.append(header.substr(1)).append(data).append(footer);
  rest.append(lookahead_, lookahead_pos_, std::string::npos);
  lookahead_.swap(rest);
  lookahead_pos_ = 0;
  offset_ = offset + 1;
  resync();
  skip(std::move(message), offset_ - offset);
}

bool TFRecordReader::next(std::string* record) {
  while (!done_) {
    const uint64_t offset = offset_;
    const uint64_t index = index_;
    char header_bytes[kHeaderBytes];
    size_t got = read_full(header_bytes, kHeaderBytes);
    const std::string_view header(header_bytes, got);
    if (got == 0) {
      finish();
      return false;
    }
    ++index_;
    if (got < kHeaderBytes) {
      fault(index, offset,
            "truncated header (" + std::to_string(got) + " of " + std::to_string(kHeaderBytes) +
                " bytes)",
            header);
      continue;
    }
    const auto* octets = reinterpret_cast<const unsigned char*>(header_bytes);
    const uint32_t stored_length_crc = get_le32(octets + 8);
    const uint32_t length_crc = mask_crc(crc32c(octets, 8));
    if (stored_length_crc != length_crc) {
      std::string reason = crc_mismatch("length", stored_length_crc, length_crc);
      if (const char* kind = offset == 0 ? compression_of(octets) : nullptr) {
        reason += std::string("; the file looks ") + kind +
                  "-compressed, which this reader does not read";
      }
      fault(index, offset, reason, header);
      continue;
    }
    const uint64_t length = get_le64(octets);
    if (options_.max_record_bytes > 0 && length > options_.max_record_bytes) {
      fault(index, offset,
            "record of " + std::to_string(length) + " bytes is over the limit of " +
                std::to_string(options_.max_record_bytes) + kOversizedMark,
            header);
      continue;
    }
    if (!read_data(length, record)) {
      fault(index, offset,
            "truncated record (header says " + std::to_string(length) + " bytes, file ends after " +
                std::to_string(record->size()) + ")",
            header, *record);
      continue;
    }
    char footer_bytes[kFooterBytes];
    got = read_full(footer_bytes, kFooterBytes);
    const std::string_view footer(footer_bytes, got);
    if (got < kFooterBytes) {
      fault(index, offset,
            "truncated record (data CRC: " + std::to_string(got) + " of " +
                std::to_string(kFooterBytes) + " bytes)",
            header, *record, footer);
      continue;
    }
    const uint32_t stored_data_crc = get_le32(reinterpret_cast<const unsigned char*>(footer_bytes));
    const uint32_t data_crc = mask_crc(crc32c(record->data(), record->size()));
    if (stored_data_crc != data_crc) {
      std::string reason = crc_mismatch("data", stored_data_crc, data_crc);
      // A valid header next means only this record's bytes are bad.
      if (options_.skip_corrupt && framing_intact()) {
        skip(describe(index, offset, reason), offset_ - offset);
      } else {
        fault(index, offset, reason, header, *record, footer);
      }
      continue;
    }
    record_offset_ = offset;
    ++stats_.records;
    return true;
  }
  return false;
}

TFRecordWriter::TFRecordWriter(const std::string& path)
    : file_(std::make_unique<AtomicFileWriter>(path)) {}

TFRecordWriter::~TFRecordWriter() = default;

void TFRecordWriter::write(std::string_view record) {
  char header[kHeaderBytes];
  char footer[kFooterBytes];
  encode_header(record.size(), header);
  encode_footer(record, footer);
  file_->append(std::string_view(header, kHeaderBytes));
  file_->append(record);
  file_->append(std::string_view(footer, kFooterBytes));
}

void TFRecordWriter::close() {
  if (closed_) {
    return;
  }
  file_->commit();
  closed_ = true;
}

const char* compression_of(const unsigned char* b) {
  if (b[0] == 0x1f && b[1] == 0x8b) return "GZIP";
  // RFC 1950: deflate (CM 8) with a window of at most 32 KiB, and the
  // header's check bits making it a multiple of 31.
  if ((b[0] & 0x0f) == 8 && (b[0] >> 4) <= 7 && (b[0] * 256 + b[1]) % 31 == 0) return "ZLIB";
  return nullptr;
}

std::string frame_record(std::string_view data) {
  std::string out(kHeaderBytes + data.size() + kFooterBytes, '\0');
  encode_header(data.size(), &out[0]);
  std::copy(data.begin(), data.end(), out.begin() + kHeaderBytes);
  encode_footer(data, &out[kHeaderBytes + data.size()]);
  return out;
}

}  // namespace fastnn::io
