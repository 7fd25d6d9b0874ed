#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with AddressSanitizer and
# UndefinedBehaviorSanitizer) into build-fuzz/ and runs each for a bounded
# time from its committed seed corpus (fuzz/corpus/TARGET/). New inputs that
# reach new code go to build-fuzz/corpus/TARGET/ (the committed corpus is
# only read); a crash leaves crash-* / leak-* / timeout-* files in
# build-fuzz/findings/ and fails the script. Prints executions per target.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET ...]
#   FUZZ_RUNS=N also ends a target after N executions (the long runs of
#   docs/reliability.md: FUZZ_RUNS=10000000 scripts/fuzz.sh 3600).
#   targets: tfrecord example image hparams value pcs csv checkpoint tf_checkpoint coordinator
#   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(tfrecord example image hparams value pcs csv checkpoint tf_checkpoint coordinator)
OUT=${FUZZ_BUILD_DIR:-build-fuzz}

missing=()
command -v clang++ >/dev/null || missing+=(clang)
dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" ||
  missing+=(libclang-rt-14-dev)
if ((${#missing[@]})); then scripts/apt_install.sh fuzz "${missing[@]}"; fi
CCACHE=$(command -v ccache || true)
# As the main build (docs/design/build.md, "Build cache"): a second clone hits.
# This build has debug info, so hash_dir off means its paths may name the
# clone that filled the cache; the findings' stack traces name files by
# their relative paths either way.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
[ -f "$OUT/build.ninja" ] ||
  CC=clang CXX=clang++ cmake -S fuzz -B "$OUT" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    ${CCACHE:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache} >/dev/null
cmake --build "$OUT" -j "${JOBS:-2}" >/dev/null

mkdir -p "$OUT/findings"
status=0
# Sanitizer reports name the failing line; leaks count as findings.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1
for t in "${TARGETS[@]}"; do
  mkdir -p "$OUT/corpus/$t"
  log="$OUT/fuzz_$t.log"
  # -rss_limit_mb: an input that makes a parser allocate gigabytes is a
  # finding (limits on untrusted sizes), not an OOM of the host.
  start=$(date +%s)
  if "$OUT/bin/fuzz_$t" "$OUT/corpus/$t" "fuzz/corpus/$t" -max_total_time="$SECS" \
       ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$OUT/findings/$t-" >"$log" 2>&1; then
    result=ok
  else
    result="FINDING (see $log and $OUT/findings/)"
    status=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$OUT/corpus/$t" "fuzz/corpus/$t" -type f 2>/dev/null | wc -l)
  printf 'fuzz %-10s %10s executions in %s s, corpus %s files: %s\n' "$t" "${runs:-?}" \
    "$(($(date +%s) - start))" "$corpus" "$result"
done
exit $status
