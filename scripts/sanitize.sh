#!/usr/bin/env bash
# Builds the project with sanitizers into its own tree and runs tests there.
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/): the
#         unit and integration suites (every test with those labels).
#   tsan: ThreadSanitizer (build-tsan/): the multi-threaded parts, the input
#         pipeline (datasets_test), the gradient reducer (dist_comm_test,
#         dist_train_test) and the coordinator's handlers (dist_service_test).
# LibTorch, Gloo, gRPC and protobuf come from Debian uninstrumented; the
# suppression files in scripts/sanitizers/ name only their frames, never
# this project's (docs/reliability.md says what each covers).
# Usage: scripts/sanitize.sh asan|tsan [ctest args]   (JOBS=2 by default;
#   SANITIZE_LABELS='multiprocess' runs that label under asan instead)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh asan|tsan [ctest args]}
shift
supp=$PWD/scripts/sanitizers
case $kind in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined"
    labels=(-L "${SANITIZE_LABELS:-unit|integration}")
    targets=(all)
    # allocator_may_return_null: an impossible allocation (a num_classes of
    # 10^11) fails as it does under glibc, which the trainer turns into a
    # config error (exit 2); ASan's default would abort the process instead.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0:allocator_may_return_null=1
    export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ;;
  tsan)
    flags="-fsanitize=thread"
    # The coordinator through gRPC (dist_coordinator_test) is not run here:
    # Debian's gRPC is uninstrumented, so TSan reports its hand-offs between
    # threads by the hundred, and the test's timing limits do not hold at
    # TSan's speed. Its handlers run from many threads in dist_service_test.
    targets=(datasets_test dist_comm_test dist_train_test dist_service_test)
    labels=(-R '^(datasets_test|dist_comm_test|dist_train_test|dist_service_test)$')
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
    # OpenMP's runtime is not instrumented: intra-op work stays on the
    # calling thread, so races reported are the project's own threads'.
    export OMP_NUM_THREADS=1
    ;;
  *) echo "sanitize: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
esac
dir=build-$kind
scripts/setup.sh --no-build
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" \
    -DCMAKE_C_FLAGS="$flags -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
fi
cmake --build "$dir" -j "${JOBS:-2}" --target "${targets[@]}"
cd "$dir"
ctest --output-on-failure --timeout 1800 "${labels[@]}" "$@"
