#include "fastnn/tfrecord.h"

#include "src/io/atomic_file.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "src/io/crc32c.h"
#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kFooterBytes = 4;
// Record data is read in growing chunks starting here, so a corrupt but
// CRC-valid length cannot make the reader allocate more than the file holds.
constexpr uint64_t kFirstChunkBytes = uint64_t{1} << 20;

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
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
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
  std::snprintf(buf,
                sizeof(buf),
                "%s CRC mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                ")",
                what,
                stored,
                computed);
  return buf;
}

}  // namespace

TFRecordReader::TFRecordReader(std::unique_ptr<ByteSource> src,
                               bool skip_corrupt)
    : src_(std::move(src)), skip_corrupt_(skip_corrupt) {}

size_t TFRecordReader::read_full(void* dst, size_t n) {
  auto* p = static_cast<char*>(dst);
  size_t got = 0;
  while (got < n) {
    size_t r = src_->read(p + got, n - got);
    if (r == 0) {
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

std::string TFRecordReader::describe(uint64_t index,
                                     uint64_t offset,
                                     const std::string& reason) const {
  return src_->name() + ": record " + std::to_string(index) + " at offset " +
         std::to_string(offset) + ": " + reason;
}

void TFRecordReader::skip(std::string message, uint64_t bytes) {
  ++stats_.skipped;
  stats_.skipped_bytes += bytes;
  if (skip_reasons_.size() < kMaxSkipReasons) {
    skip_reasons_.push_back(std::move(message));
  }
}

void TFRecordReader::stop(uint64_t index,
                          uint64_t offset,
                          const std::string& reason) {
  std::string message = describe(index, offset, reason);
  if (!skip_corrupt_) {
    throw DataError(message);
  }
  if (reason.rfind("truncated", 0) == 0) ++stats_.skipped_truncated;
  // Nothing after this point can be trusted; count the unread tail as lost.
  char sink[1 << 16];
  while (read_full(sink, sizeof(sink)) > 0) {
  }
  skip(std::move(message), offset_ - offset);
  done_ = true;
}

bool TFRecordReader::next(std::string* record) {
  while (!done_) {
    const uint64_t offset = offset_;
    const uint64_t index = index_;
    unsigned char header[kHeaderBytes];
    size_t got = read_full(header, kHeaderBytes);
    if (got == 0) {
      done_ = true;
      return false;
    }
    ++index_;
    if (got < kHeaderBytes) {
      stop(index,
           offset,
           "truncated header (" + std::to_string(got) + " of " +
               std::to_string(kHeaderBytes) + " bytes)");
      return false;
    }
    const uint32_t stored_length_crc = get_le32(header + 8);
    const uint32_t length_crc = mask_crc(crc32c(header, 8));
    if (stored_length_crc != length_crc) {
      std::string reason =
          crc_mismatch("length", stored_length_crc, length_crc);
      if (offset == 0 && header[0] == 0x1f && header[1] == 0x8b) {
        reason += "; the file looks gzip-compressed, which is not supported";
      }
      stop(index, offset, reason);
      return false;
    }
    const uint64_t length = get_le64(header);
    if (!read_data(length, record)) {
      stop(index,
           offset,
           "truncated record (header says " + std::to_string(length) +
               " bytes, file ends after " + std::to_string(record->size()) +
               ")");
      return false;
    }
    unsigned char footer[kFooterBytes];
    got = read_full(footer, kFooterBytes);
    if (got < kFooterBytes) {
      stop(index,
           offset,
           "truncated record (data CRC: " + std::to_string(got) + " of " +
               std::to_string(kFooterBytes) + " bytes)");
      return false;
    }
    const uint32_t stored_data_crc = get_le32(footer);
    const uint32_t data_crc = mask_crc(crc32c(record->data(), record->size()));
    if (stored_data_crc != data_crc) {
      std::string message = describe(
          index, offset, crc_mismatch("data", stored_data_crc, data_crc));
      if (!skip_corrupt_) {
        throw DataError(message);
      }
      skip(std::move(message), offset_ - offset);
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

std::string frame_record(std::string_view data) {
  std::string out(kHeaderBytes + data.size() + kFooterBytes, '\0');
  encode_header(data.size(), &out[0]);
  std::copy(data.begin(), data.end(), out.begin() + kHeaderBytes);
  encode_footer(data, &out[kHeaderBytes + data.size()]);
  return out;
}

}  // namespace fastnn::io
