#!/usr/bin/env bash
# Set-up (packages + build) and every test, through CTest.
# Usage: scripts/test.sh [ctest args, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
