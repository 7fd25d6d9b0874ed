#!/usr/bin/env bash
# Set-up (packages + build), the format check and every test, through CTest.
# Usage: scripts/test.sh [ctest args, e.g. -L unit]
# Two tests run at a time (CTEST_JOBS, default 2); the ones that time the
# machine or load it whole are RUN_SERIAL in tests/CMakeLists.txt and run
# alone. build/test_tmp is removed when the run ends (FASTNN_KEEP_TEST_TMP=1
# keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
# The format check first: seconds, and a badly formatted file fails before
# the build (scripts/format.sh formats the tree).
scripts/setup.sh --tests --no-build
scripts/format.sh --check
scripts/setup.sh --tests
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
JOBS_N=${CTEST_JOBS:-2}
# Side by side, each test process's LibTorch gets one OpenMP thread: two
# processes of two spinning threads each on two cores slow each other down.
# (The trainers the integration tests start set their own thread count;
# coreutils' nproc also reads OMP_NUM_THREADS, so scripts that need the
# machine's core count unset it first.)
if [ "$JOBS_N" -gt 1 ]; then export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}; fi
ctest --output-on-failure --timeout 900 -j "$JOBS_N" "$@"
