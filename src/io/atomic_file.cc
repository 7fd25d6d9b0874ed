#include "src/io/atomic_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a file";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

OutputTarget resolve_output(const std::string& path) {
  std::string at = path;
  // Linux's own bound on symbolic links followed in one lookup.
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0) {
      if (errno == ENOENT) return {at, false};
      throw DataError("cannot write '" + path + "': " + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode)) {
      std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
      const ssize_t n = ::readlink(at.c_str(), link.data(), link.size());
      if (n < 0) throw DataError("cannot write '" + path + "': " + std::strerror(errno));
      link.resize(static_cast<size_t>(n));
      at = link.front() == '/' ? link : parent_dir(at) + "/" + link;
      continue;
    }
    if (S_ISREG(st.st_mode)) return {at, false};
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {at, true};
    throw DataError("cannot write '" + path + "': " + (at == path ? "it" : "'" + at + "'") +
                    " is " + kind_of(st.st_mode) +
                    " (outputs are regular files, character devices or FIFOs)");
  }
  throw DataError("cannot write '" + path + "': " + std::strerror(ELOOP));
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  const OutputTarget target = resolve_output(path_);
  write_through_ = target.write_through;
  if (write_through_) {
    // O_NONBLOCK so that a FIFO without a reader fails (ENXIO) instead of
    // waiting for one; the writes themselves block as usual.
    fd_ = ::open(target.path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0 && errno == ENXIO) {
      throw DataError("cannot write '" + path_ + "': it is a FIFO that no process reads");
    }
    if (fd_ < 0) fail("open", errno);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  } else {
    final_path_ = target.path;
    tmp_path_ = final_path_ + ".tmp-" + std::to_string(::getpid());
    fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      throw DataError("cannot create '" + tmp_path_ + "': " + std::strerror(errno));
    }
  }
  buffer_.reserve(kWriteBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
  if (!committed_ && !write_through_) {
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
  // A device or a FIFO has nothing to make durable (fsync: EINVAL).
  if (!write_through_ && ::fsync(fd_) != 0) {
    fail("sync", errno);
  }
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    fail("close", errno);
  }
  if (write_through_) {
    committed_ = true;
    return;
  }
  if (::rename(tmp_path_.c_str(), final_path_.c_str()) != 0) {
    fail("rename temporary file onto", errno);
  }
  committed_ = true;
  sync_dir(parent_dir(final_path_), path_);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.append(bytes);
  writer.commit();
}

std::string read_file(const std::string& path, size_t max_bytes, int fifo_wait_ms) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of
  // waiting for one without end.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw DataError("cannot open '" + path + "': " + std::strerror(errno));
  }
  auto fail = [&](const std::string& why) {
    ::close(fd);
    throw DataError("cannot read '" + path + "': " + why);
  };
  struct stat st;
  if (::fstat(fd, &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(std::strerror(EISDIR));
  if (S_ISFIFO(st.st_mode)) {
    pollfd wait{fd, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&wait, 1, fifo_wait_ms)) < 0 && errno == EINTR) {
    }
    if (ready == 0) {
      const bool whole = fifo_wait_ms % 1000 == 0;
      fail("no process wrote to the FIFO within " +
           std::to_string(whole ? fifo_wait_ms / 1000 : fifo_wait_ms) + (whole ? " s" : " ms"));
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // A regular file is read up to its size (a file that grows meanwhile is
  // not followed); anything else, and the size-0 files of /proc, up to
  // max_bytes, one byte past it telling that there was more.
  const bool sized = S_ISREG(st.st_mode) && st.st_size > 0;
  const size_t limit = sized ? static_cast<size_t>(st.st_size) : max_bytes + 1;
  std::string out(std::min(limit, size_t{1} << 16), '\0');
  if (sized) out.resize(limit);
  size_t size = 0;
  while (size < limit) {
    if (size == out.size()) out.resize(std::min(limit, out.size() * 2));
    const ssize_t got = ::read(fd, &out[size], out.size() - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(std::strerror(errno));
    if (got == 0) break;
    size += static_cast<size_t>(got);
  }
  if (!sized && size > max_bytes) {
    fail(kind_of(st.st_mode) + " longer than " + std::to_string(max_bytes) +
         " bytes (the most read from it)");
  }
  ::close(fd);
  out.resize(size);
  return out;
}

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw DataError("cannot read '" + path + "': it is " + kind_of(st.st_mode) + ", not " + what);
  }
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
