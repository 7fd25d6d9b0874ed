#!/usr/bin/env bash
# Soak of the fault-injection tests (CTest label `faults`, tests/faults/):
# runs them N times in a row under load — two busy processes on the side
# (spinners, or the FAULT_SOAK_LOAD commands below), so that timing
# assumptions break here rather than on a loaded CI machine. Prints each
# round's result and duration, then "fault soak: K/N rounds passed under 2
# load processes"; exits 1 if any round failed. Root runs the root-only
# tests too (mount, network namespaces).
# usage: scripts/fault_soak.sh [N=20] [BUILD_DIR=build]
#   FAULT_SOAK_LOAD1 / FAULT_SOAK_LOAD2: a shell command that is that load
#   slot's busy process instead of a spinner (e.g. a long fuzz run, so the
#   load does useful work); when it ends, the slot spins until the soak ends.
#   Each round also prints the 1-minute load average at its end.
set -uo pipefail
rounds=${1:-20}
build=${2:-build}
case $rounds in
  '' | *[!0-9]* | 0) echo "usage: $0 [N=20] [BUILD_DIR=build]  (N >= 1)" >&2; exit 2 ;;
esac
if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "$0: '$build' is not a configured build directory (no CTestTestfile.cmake)" >&2
  exit 2
fi
command -v ctest >/dev/null || { echo "$0: ctest not found" >&2; exit 2; }

spinners=()
stop_spinners() {
  local p
  for p in "${spinners[@]}"; do
    # Each slot is its own process group (setsid): a load command's
    # children stop with it.
    kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  spinners=()
}
trap stop_spinners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
load=""
for slot in 1 2; do
  var=FAULT_SOAK_LOAD$slot
  cmd=${!var:-}
  setsid sh -c "${cmd:+$cmd; }exec sh -c 'while :; do :; done'" </dev/null &
  spinners+=($!)
  load+=" slot $slot: ${cmd:-spinner};"
done
echo "fault soak: $rounds rounds of 'ctest -L faults' in $build, load processes ${spinners[*]} (${load# })"

passed=0
logs=$(mktemp -d)
for ((i = 1; i <= rounds; i++)); do
  t0=$(date +%s)
  ctest --test-dir "$build" -L faults --no-tests=error --output-on-failure >"$logs/round$i.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  loadavg=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
  summary=$(grep -E '% tests passed|No tests were found' "$logs/round$i.log" | tail -n 1)
  # Each test's line: "1/5 Test #1: faults_x .....   Passed   12.34 sec".
  tests=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \(faults_[a-z_0-9]*\) [ .*]*\([A-Za-z][A-Za-z ]*[a-z]\) *\([0-9.]*\) sec$/\1 \2 \3 s/p' \
    "$logs/round$i.log" | sed 's/^faults_//' | paste -sd ',' - | sed 's/,/, /g')
  if [ $rc = 0 ]; then
    passed=$((passed + 1))
    echo "round $i/$rounds: pass (${secs} s, load $loadavg) $summary"
    echo "  $tests"
  else
    echo "round $i/$rounds: FAIL (${secs} s, load $loadavg, ctest exit $rc) $summary"
    echo "  $tests"
    sed -n '/The following tests FAILED/,$p' "$logs/round$i.log"
    echo "  full output: $logs/round$i.log"
  fi
done
echo "fault soak: $passed/$rounds rounds passed under 2 load processes"
if [ $passed = "$rounds" ]; then
  rm -rf "$logs"
  exit 0
fi
echo "logs of the failed rounds kept in $logs"
exit 1
