#include "fastnn/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

constexpr size_t kFileBufferBytes = size_t{1} << 20;

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path)
      : fd_(fd), path_(std::move(path)), buffer_(kFileBufferBytes) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  size_t read(void* dst, size_t n) override {
    if (n == 0) {
      return 0;
    }
    if (begin_ == end_) {
      // Large requests bypass the buffer to avoid a copy.
      if (n >= buffer_.size()) {
        return read_some(dst, n);
      }
      begin_ = 0;
      end_ = read_some(buffer_.data(), buffer_.size());
      if (end_ == 0) {
        return 0;
      }
    }
    size_t k = std::min(n, end_ - begin_);
    std::memcpy(dst, buffer_.data() + begin_, k);
    begin_ += k;
    return k;
  }

  const std::string& name() const override { return path_; }

 private:
  size_t read_some(void* dst, size_t n) {
    for (;;) {
      ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) {
        return static_cast<size_t>(r);
      }
      if (errno != EINTR) {
        throw DataError("cannot read '" + path_ + "': " + std::strerror(errno));
      }
    }
  }

  int fd_;
  std::string path_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(std::string bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}

  size_t read(void* dst, size_t n) override {
    size_t k = std::min(n, bytes_.size() - pos_);
    if (k == 0) {
      return 0;
    }
    std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }

  const std::string& name() const override { return name_; }

 private:
  std::string bytes_;
  std::string name_;
  size_t pos_ = 0;
};

}  // namespace

ByteSource::~ByteSource() = default;

std::unique_ptr<ByteSource> open_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  try {
    return std::make_unique<FileSource>(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::unique_ptr<ByteSource> memory_source(std::string bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace fastnn::io
