#!/usr/bin/env bash
# Set-up (packages + build) and every test, through CTest.
# Usage: scripts/test.sh [ctest args, e.g. -L unit]
# Two tests run at a time (CTEST_JOBS, default 2); the ones that time the
# machine or load it whole are RUN_SERIAL in tests/CMakeLists.txt and run
# alone. build/test_tmp is removed when the run ends (FASTNN_KEEP_TEST_TMP=1
# keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-2}" "$@"
