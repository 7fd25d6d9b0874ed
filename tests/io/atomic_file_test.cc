// What the shared output writer and input reader do with paths that are not
// plain regular files: symbolic links, devices, FIFOs, directories.
#include "src/io/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "fastnn/errors.h"

namespace fastnn::io {
namespace {

namespace fs = std::filesystem;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

mode_t type_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & S_IFMT;
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "atomic_file_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A character device like /dev/null (1,3) or /dev/full (1,7), made here so
  // a regression replaces a node of the test's own, never the system's.
  // Needs CAP_MKNOD (root, outside a restricted container).
  bool make_char_device(const std::string& p, unsigned minor) {
    return ::mknod(p.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, SymlinkedOutputKeepsTheLinkAndReplacesItsTarget) {
  fs::create_directory(dir_ / "real");
  write_file_atomic(path("real/target"), "old");
  fs::create_symlink("real/target", dir_ / "link");
  fs::create_symlink("link", dir_ / "link2");
  write_file_atomic(path("link2"), "new");
  EXPECT_EQ(type_of(path("link")), S_IFLNK);
  EXPECT_EQ(type_of(path("link2")), S_IFLNK);
  EXPECT_EQ(read_file(path("real/target")), "new");
  // The temporary was made beside the target, and is gone.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "real"), fs::directory_iterator()), 1);
}

TEST_F(AtomicFileTest, DanglingSymlinkCreatesItsTarget) {
  fs::create_symlink("made", dir_ / "link");
  write_file_atomic(path("link"), "abc");
  EXPECT_EQ(type_of(path("link")), S_IFLNK);
  EXPECT_EQ(read_file(path("made")), "abc");
}

TEST_F(AtomicFileTest, CharacterDeviceIsWrittenThroughNotReplaced) {
  if (!make_char_device(path("null"), 3)) GTEST_SKIP() << "mknod: " << std::strerror(errno);
  fs::create_symlink("null", dir_ / "to_null");
  write_file_atomic(path("null"), std::string(3 << 20, 'x'));
  write_file_atomic(path("to_null"), "y");
  EXPECT_EQ(type_of(path("null")), S_IFCHR);
  EXPECT_EQ(type_of(path("to_null")), S_IFLNK);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);
}

TEST_F(AtomicFileTest, FullDeviceFailsAndStaysADevice) {
  if (!make_char_device(path("full"), 7)) GTEST_SKIP() << "mknod: " << std::strerror(errno);
  const std::string msg = message_of([&] { write_file_atomic(path("full"), "z"); });
  EXPECT_NE(msg.find("cannot write '" + path("full") + "': No space left on device"),
            std::string::npos)
      << msg;
  EXPECT_EQ(type_of(path("full")), S_IFCHR);
}

TEST_F(AtomicFileTest, FifoWithAReaderIsWrittenThrough) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] { return read_file(path("fifo")); });
  // The reader opens without waiting for a writer, and then waits for data;
  // the writer needs it open first.
  std::string payload(200000, 'p');
  for (int tries = 0;; ++tries) {
    try {
      write_file_atomic(path("fifo"), payload);
      break;
    } catch (const DataError&) {
      ASSERT_LT(tries, 500) << "the reader never opened the FIFO";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_EQ(reader.get(), payload);
  EXPECT_EQ(type_of(path("fifo")), S_IFIFO);
}

TEST_F(AtomicFileTest, FifoNobodyReadsIsRefusedAtOnce) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  const std::string msg = message_of([&] { write_file_atomic(path("fifo"), "q"); });
  EXPECT_EQ(msg, "cannot write '" + path("fifo") + "': it is a FIFO that no process reads");
  EXPECT_EQ(type_of(path("fifo")), S_IFIFO);
}

TEST_F(AtomicFileTest, DirectoryAndLoopAreRefusedBeforeAnythingIsWritten) {
  fs::create_directory(dir_ / "d");
  EXPECT_EQ(message_of([&] { AtomicFileWriter w(path("d")); }),
            "cannot write '" + path("d") +
                "': it is a directory (outputs are regular files, character devices or FIFOs)");
  EXPECT_TRUE(fs::is_empty(dir_ / "d"));
  fs::create_symlink("d", dir_ / "to_d");
  EXPECT_NE(message_of([&] { AtomicFileWriter w(path("to_d")); }).find("'" + path("d") + "'"),
            std::string::npos);
  fs::create_symlink("b", dir_ / "a");
  fs::create_symlink("a", dir_ / "b");
  EXPECT_EQ(message_of([&] { write_file_atomic(path("a"), "x"); }),
            "cannot write '" + path("a") + "': " + std::strerror(ELOOP));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 4);
}

TEST_F(AtomicFileTest, SizelessSourcesAreReadUpToTheLimit) {
  fs::create_symlink("/dev/zero", dir_ / "zero");
  EXPECT_EQ(message_of([&] { read_file(path("zero"), 1 << 20); }),
            "cannot read '" + path("zero") +
                "': a character device longer than 1048576 bytes (the most read from it)");
  EXPECT_EQ(read_file("/dev/null"), "");
  // /proc's files say size 0 and are read whole.
  EXPECT_NE(read_file("/proc/self/status").find("Pid:"), std::string::npos);
}

TEST_F(AtomicFileTest, FifoNobodyWritesIsAnErrorNotAWaitWithoutEnd) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  auto reading = std::async(std::launch::async, [&] {
    return message_of([&] { read_file(path("fifo"), kReadFileLimit, 200); });
  });
  const bool ended = reading.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!ended) ::close(::open(path("fifo").c_str(), O_WRONLY | O_NONBLOCK));  // let it go
  ASSERT_TRUE(ended);
  EXPECT_EQ(reading.get(),
            "cannot read '" + path("fifo") + "': no process wrote to the FIFO within 200 ms");
}

TEST_F(AtomicFileTest, DirectoryIsNotRead) {
  EXPECT_EQ(message_of([&] { read_file(dir_.string()); }),
            "cannot read '" + dir_.string() + "': " + std::strerror(EISDIR));
}

}  // namespace
}  // namespace fastnn::io
