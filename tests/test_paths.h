#pragma once
// Where the tests find the source tree, the built binaries and their scratch
// directory. tests/test_paths.cc is the one test unit compiled with the
// build's absolute paths; every other test unit's compile command is the
// same in any clone, so a second clone of the tree hits the compiler cache
// (docs/design/build.md, "Build cache").
namespace fastnn::test_paths {
const char* source_dir();  // the repository root
const char* bin_dir();     // build/bin
const char* test_tmp();    // build/test_tmp, removed after a ctest run
}  // namespace fastnn::test_paths

#define FASTNN_SOURCE_DIR (::fastnn::test_paths::source_dir())
#define FASTNN_BIN_DIR (::fastnn::test_paths::bin_dir())
#define FASTNN_TEST_TMP (::fastnn::test_paths::test_tmp())
