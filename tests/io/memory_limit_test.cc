// The memory budget follows a container's cgroup limit, v2 and v1, on the
// process's own cgroup or an ancestor's (not RAM alone, which would get a
// pod whose memory.max is below the node's RAM OOM-killed).
#include "src/io/memory_limit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace fastnn::io {
namespace {

namespace fs = std::filesystem;

class MemoryLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "cgroup_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  double usable(const std::string& self, double physical = 64e9) {
    return usable_memory_bytes(root_.string(), self, physical);
  }
  fs::path root_;
};

TEST_F(MemoryLimitTest, CgroupV2LimitOfTheProcessOrAnAncestor) {
  put("kubepods/pod1/ctr/memory.max", "max\n");
  put("kubepods/pod1/memory.max", "4294967296\n");
  EXPECT_EQ(usable("0::/kubepods/pod1/ctr\n"), 4294967296.0);
  put("kubepods/pod1/ctr/memory.max", "1073741824\n");
  EXPECT_EQ(usable("0::/kubepods/pod1/ctr\n"), 1073741824.0);
  // Inside a cgroup namespace the process sees itself at the root.
  put("memory.max", "2147483648\n");
  EXPECT_EQ(usable("0::/\n"), 2147483648.0);
}

TEST_F(MemoryLimitTest, CgroupV1MemoryControllerLimit) {
  put("memory/docker/abc/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(usable("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n"), 536870912.0);
  // v1's "no limit" is a huge number: RAM is then the bound.
  put("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(usable("5:cpuacct,memory:/docker/abc\n", 8e9), 8e9);
}

TEST_F(MemoryLimitTest, NoCgroupFilesMeanRamAndUnreadableTextIsIgnored) {
  EXPECT_EQ(usable("0::/nowhere\n", 3e9), 3e9);
  put("memory.max", "garbage");
  EXPECT_EQ(usable("0::/\nnot a line\n", 3e9), 3e9);
  EXPECT_EQ(usable("", 0), 0);
  EXPECT_GT(usable_memory_bytes(), 0);
}

}  // namespace
}  // namespace fastnn::io
