#include "src/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

constexpr size_t kWriteBufferBytes = size_t{1} << 20;

std::string parent_dir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Makes a completed rename durable. Filesystems that cannot fsync a directory
// (EINVAL) are accepted as they are.
void sync_dir(const std::string& dir, const std::string& path) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != EROFS) {
    throw DataError("cannot sync directory of '" + path + "': " + std::strerror(err));
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    throw DataError("cannot create '" + tmp_path_ + "': " + std::strerror(errno));
  }
  buffer_.reserve(kWriteBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
  if (!committed_) {
    ::unlink(tmp_path_.c_str());
  }
}

void AtomicFileWriter::fail(const char* what, int err) const {
  throw DataError(std::string("cannot ") + what + " '" + path_ + "': " + std::strerror(err));
}

void AtomicFileWriter::write_all(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      fail("write", errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFileWriter::flush_buffer() {
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::append(std::string_view bytes) {
  if (fd_ < 0) {
    throw std::logic_error("AtomicFileWriter::append after commit: " + path_);
  }
  if (buffer_.size() + bytes.size() > kWriteBufferBytes) {
    flush_buffer();
    if (bytes.size() >= kWriteBufferBytes) {
      write_all(bytes.data(), bytes.size());
      return;
    }
  }
  buffer_.append(bytes.data(), bytes.size());
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) {
    throw std::logic_error("AtomicFileWriter::commit twice: " + path_);
  }
  flush_buffer();
  if (::fsync(fd_) != 0) {
    fail("sync", errno);
  }
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    fail("close", errno);
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    fail("rename temporary file onto", errno);
  }
  committed_ = true;
  sync_dir(parent_dir(path_), path_);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.append(bytes);
  writer.commit();
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  }
  // One spare byte so a file of the stated size hits EOF without a regrow.
  struct stat st;
  size_t capacity = 1 << 16;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    capacity = static_cast<size_t>(st.st_size) + 1;
  }
  std::string out(capacity, '\0');
  size_t size = 0;
  for (;;) {
    if (size == out.size()) {
      out.resize(out.size() * 2);
    }
    ssize_t got = ::read(fd, &out[size], out.size() - size);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      throw DataError("cannot read '" + path + "': " + std::strerror(err));
    }
    if (got == 0) {
      break;
    }
    size += static_cast<size_t>(got);
  }
  out.resize(size);
  ::close(fd);
  return out;
}

bool is_temporary_name(const std::string& filename) {
  const auto at = filename.rfind(".tmp-");
  if (at == std::string::npos || at + 5 == filename.size()) return false;
  for (size_t i = at + 5; i < filename.size(); ++i) {
    if (filename[i] < '0' || filename[i] > '9') return false;
  }
  return true;
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_temporary_name(name) || !entry.is_regular_file(ec)) continue;
    const long pid = std::strtol(name.c_str() + name.rfind(".tmp-") + 5, nullptr, 10);
    // kill(pid, 0) fails with ESRCH only when no such process exists; EPERM
    // means it exists (another user's), so its file is kept.
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      if (std::filesystem::remove(entry.path(), ec)) removed.push_back(name);
    }
  }
  return removed;
}

}  // namespace fastnn::io
