#include "tests/test_paths.h"

namespace fastnn::test_paths {
const char* source_dir() { return FASTNN_TEST_SOURCE_DIR; }
const char* bin_dir() { return FASTNN_TEST_BIN_DIR; }
const char* test_tmp() { return FASTNN_TEST_TMP_DIR; }
}  // namespace fastnn::test_paths
