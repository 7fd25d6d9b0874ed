// The tests' scratch directories under build/test_tmp and their way to read
// a file whole.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_paths.h"

namespace fastnn::testing {

/// The bytes of the file at `p` ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `dir` with nothing left of an earlier run (removed; whoever uses it
/// creates it), as a string for a command line.
inline std::string cleared_dir(const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  return dir.string();
}

/// An empty directory of the running test's own under build/test_tmp:
/// PREFIX_<pid>_<test name>.
inline std::filesystem::path per_test_dir(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::path(FASTNN_TEST_TMP) /
      (prefix + "_" + std::to_string(getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace fastnn::testing
