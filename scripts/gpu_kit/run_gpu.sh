#!/usr/bin/env bash
# FastNN-C++ on a GPU machine in one call (no internet there): builds the
# project against the LibTorch of PyTorch's pip wheel, runs `ctest -L gpu`,
# then bench/gpu_vs_pytorch.sh in parts, each under a time bound.
#
# The C++ dependencies come from the Debian 12 packages in .gpukit/debs,
# unpacked with dpkg-deb -x into BUILD_DIR/prefix (never into /). Their CMake
# configs are relocatable; .gpukit/cmake/re2 adds the re2 config Debian lacks
# (so gRPC's Findre2 needs no pkg-config).
#
# Made (with the packages) by scripts/gpu_kit/make_kit.sh into .gpukit/.
# Usage (repo root, on the GPU machine): bash .gpukit/run_gpu.sh
# Environment:
#   BUDGET (520)     seconds for the whole script; each phase gets what is left
#   BUILD_DIR (build-gpu), JOBS (nproc), PYTHON (python3)
#   BENCH_STEPS (30) BENCH_WARMUP (10) BENCH_BATCH (256)
#   BENCH_PARTS (resnet,allreduce; fmnist added when .gpukit-fmnist/ is there
#                and at least FMNIST_MIN_S=240 s are left)
#   BUILD_TARGETS (default: the trainer, evaluator, converter, allreduce_bench
#                and gpu_test), PRECISIONS, OURS_ARGS (passed to the bench)
#   SKIP_CTEST=1, SKIP_BENCH=1, STOP_AFTER=configure|build (a dry run)
# Results: $OUT/run.log (this output), configure.log, build.log, ctest.log,
#   bench.log (progress), bench.md (the tables), profile.txt (BENCH_PARTS
#   with profile), summary.txt.
set -uo pipefail
T0=$(date +%s)
KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$KIT/.." && pwd)
cd "$ROOT" || exit 1
BUDGET=${BUDGET:-520}
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=${OUT:-$ROOT/.gpukit-out}
mkdir -p "$OUT" "$BUILD_DIR"
exec > >(tee -a "$OUT/run.log") 2>&1

elapsed() { echo $(($(date +%s) - T0)); }
left() { echo $((BUDGET - $(date +%s) + T0)); }
log() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s left=$(left)s] $*"; }
declare -A STATUS=()
ORDER=()
mark() {  # PHASE RESULT
  STATUS[$1]=$2
  ORDER+=("$1")
  log "== $1: $2"
}
write_summary() {
  {
    echo "run_gpu.sh summary (elapsed $(elapsed)s of BUDGET=${BUDGET}s)"
    for p in "${ORDER[@]}"; do echo "  $p: ${STATUS[$p]}"; done
  } >"$OUT/summary.txt"
}
trap 'write_summary; log "exit"; cat "$OUT/summary.txt"' EXIT
# run_logged LOGFILE SECONDS CMD...: runs CMD under timeout, output to LOGFILE.
run_logged() {
  local f=$1 t=$2
  shift 2
  if [ "$t" -lt 5 ]; then
    echo "(not started: ${t}s left)" >>"$f"
    return 124
  fi
  log "+ $* (timeout ${t}s, log $(basename "$f"))"
  echo "+ $*" >>"$f"
  timeout -k 10 "$t" "$@" >>"$f" 2>&1
}

# --- 1. the machine ------------------------------------------------------------
log "== machine"
for d in /usr/local/nvidia/bin /usr/local/cuda/bin; do
  [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH="$PATH:$d" ;; esac
done
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  for p in /opt/torch/.venv/bin/python3; do [ -x "$p" ] && PYTHON=$p; done
fi
# pip's cmake and ninja live beside the venv's python.
PYBIN=$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null || echo /nonexistent/x)")
[ -d "$PYBIN" ] && PATH="$PATH:$PYBIN"
export PATH
echo "PYTHON=$PYTHON PATH=$PATH"
(set -x
 nvidia-smi
 nvcc --version
 g++ --version
 cat /etc/os-release
 uname -a
 nproc
 free -g
 df -h "$ROOT"
 ldd --version | head -1
 cmake --version
 ninja --version) 2>&1 | sed 's/^/  /'
"$PYTHON" - <<'EOF' 2>&1 | sed 's/^/  /'
import torch
print(f"torch {torch.__version__} CUDA {torch.version.cuda} cuDNN {torch.backends.cudnn.version()} "
      f"cxx11_abi {torch.compiled_with_cxx11_abi()} cuda_available {torch.cuda.is_available()}")
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
EOF
TORCH_PREFIX=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
if [ -z "$TORCH_PREFIX" ]; then mark torch "FAILED: $PYTHON cannot import torch"; exit 1; fi
missing=()
for t in cmake g++ nvidia-smi; do command -v $t >/dev/null || missing+=("$t"); done
if ((${#missing[@]})); then mark tools "FAILED: missing ${missing[*]}"; exit 1; fi
GEN=(-G Ninja)
if ! command -v ninja >/dev/null; then GEN=(-G "Unix Makefiles"); log "no ninja: Unix Makefiles"; fi
mark machine "ok ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed -n 1p))"

# --- 2. the Debian packages into a private prefix --------------------------------
case $BUILD_DIR in /*) PREFIX="$BUILD_DIR/prefix" ;; *) PREFIX="$ROOT/$BUILD_DIR/prefix" ;; esac
if [ ! -f "$PREFIX/.unpacked" ]; then
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  n=0
  for deb in "$KIT"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$PREFIX" || { mark unpack "FAILED on $deb"; exit 1; }
    else  # no dpkg: a .deb is an ar archive holding data.tar.*
      (t=$(mktemp -d) && cd "$t" && ar x "$deb" && tar -xf data.tar.* -C "$PREFIX" && rm -rf "$t") ||
        { mark unpack "FAILED on $deb (ar/tar)"; exit 1; }
    fi
    n=$((n + 1))
  done
  # Absolute links (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) into the prefix.
  while IFS= read -r link; do
    target=$(readlink "$link")
    if [ -e "$PREFIX$target" ]; then ln -sfn "$PREFIX$target" "$link"; fi
  done < <(find "$PREFIX" -type l -lname '/*')
  find "$PREFIX" -name '*.pc' -exec sed -i "s|^prefix=/usr\$|prefix=$PREFIX/usr|" {} +
  mkdir -p "$PREFIX/usr/lib/x86_64-linux-gnu/cmake/re2"
  cp "$KIT/cmake/re2/re2Config.cmake" "$PREFIX/usr/lib/x86_64-linux-gnu/cmake/re2/"
  touch "$PREFIX/.unpacked"
  mark unpack "ok ($n packages, $(du -sh "$PREFIX" | cut -f1))"
else
  mark unpack "ok (kept from an earlier run)"
fi
PLIB="$PREFIX/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$PLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$PLIB/pkgconfig:$PREFIX/usr/share/pkgconfig"
export PATH="$PREFIX/usr/bin:$PATH"
# -lsnappy (leveldb's link interface) is found through the prefix too.
export LIBRARY_PATH="$PLIB${LIBRARY_PATH:+:$LIBRARY_PATH}"
(set -x; protoc --version; ls -la "$PREFIX/usr/bin/grpc_cpp_plugin") 2>&1 | sed 's/^/  /'

# --- 3. configure ------------------------------------------------------------------
# NCCL from PyTorch's wheel (as scripts/gpu_check.sh), so we link what torch loads.
NCCL_ARGS=()
SITE_NVIDIA=$("$PYTHON" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null || true)
while IFS= read -r d; do
  [ -n "$d" ] || continue
  h=$(find "$d" -maxdepth 4 -path '*/include/nccl.h' 2>/dev/null | sed -n 1p)
  if [ -n "$h" ]; then
    nd=$(dirname "$(dirname "$h")")
    lib=$(ls "$nd"/lib/libnccl.so "$nd"/lib/libnccl.so.* 2>/dev/null | sed -n 1p)
    [ -n "$lib" ] && NCCL_ARGS=("-DNCCL_LIBRARY=$lib" "-DNCCL_INCLUDE_DIR=$nd/include")
    break
  fi
done <<<"$SITE_NVIDIA"
log "NCCL: ${NCCL_ARGS[*]:-(none from pip; CMake searches)}"
# The wheel's libraries find cuDNN, cuBLAS, NCCL... through $ORIGIN RUNPATHs;
# give the linker the same folders so it resolves them when linking executables.
RPL=$(cd "$(dirname "$TORCH_PREFIX")/../lib" 2>/dev/null && pwd || echo "")
while IFS= read -r d; do
  [ -n "$d" ] || continue
  for l in "$d"/*/lib "$d"/*/*/lib; do [ -d "$l" ] && RPL="$RPL:$l"; done
done <<<"$SITE_NVIDIA"
RPL=${RPL#:}
CUDA_ROOT=""
if command -v nvcc >/dev/null; then CUDA_ROOT=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd); fi
# The prefix first: a package config is taken from the first entry that has it.
CMAKE_PREFIXES="$PREFIX/usr;$TORCH_PREFIX${CUDA_ROOT:+;$CUDA_ROOT}"
export CMAKE_POLICY_VERSION_MINIMUM=3.5  # CMake 4 and old package configs
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # H100/H200; skips detection
export CUDAToolkit_ROOT=${CUDAToolkit_ROOT:-$CUDA_ROOT}
CFG=(cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DFASTNN_BUILD_BENCH=ON
  "-DCMAKE_PREFIX_PATH=$CMAKE_PREFIXES" -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DOPENSSL_ROOT_DIR=$PREFIX/usr" "${NCCL_ARGS[@]}")
[ -n "$RPL" ] && CFG+=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$RPL")
# Debian's multiarch headers (jconfig.h, openssl/configuration.h) live in
# usr/include/x86_64-linux-gnu, which the compiler searches only under /usr.
MA_INC="$PREFIX/usr/include/x86_64-linux-gnu"
# The wheel ships its own protobuf headers in torch/include/google, which would
# shadow Debian's 3.21 ones (linked from the prefix): hide them on this
# throwaway machine.
TI=$($PYTHON -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"include"))')
[ -d "$TI/google/protobuf" ] && mv "$TI/google" "$TI/google.fastnn-hidden" && log "hid $TI/google"
GLOO_INC=$KIT/gloo-include
CFG+=("-DCMAKE_C_FLAGS=-isystem $MA_INC" "-DCMAKE_CXX_FLAGS=-isystem $MA_INC -isystem $GLOO_INC")
if run_logged "$OUT/configure.log" $(($(left) - 60)) "${CFG[@]}"; then
  mark configure ok
else
  rc=$?
  mark configure "FAILED (exit $rc)"
  grep -n -A12 'CMake Error' "$OUT/configure.log" | head -80
  tail -n 30 "$OUT/configure.log"
  exit 1
fi
grep -E 'LibTorch:|NCCL:|CUDA toolkit:|Found (Protobuf|ZLIB|PNG|JPEG|OpenSSL|c-ares)|Caffe2|cuDNN|RE2|Warning' \
  "$OUT/configure.log" | sed 's/^/  /' | head -40
log "found paths (CMakeCache):"
grep -E '^(Protobuf_(LIBRARY|PROTOC_EXECUTABLE|INCLUDE_DIR)|gRPC_DIR|absl_DIR|CLI11_DIR|nlohmann_json_DIR|GTest_DIR|re2_DIR|PNG_LIBRARY_RELEASE|JPEG_LIBRARY_RELEASE|ZLIB_LIBRARY_RELEASE|OPENSSL_SSL_LIBRARY|c-ares_LIBRARY|Torch_DIR|NCCL_LIBRARY|CUDAToolkit_NVCC_EXECUTABLE|CMAKE_CXX_COMPILER)[:=]' \
  "$BUILD_DIR/CMakeCache.txt" | sed 's/^/  /'
[ "${STOP_AFTER:-}" = configure ] && { mark stop "after configure (STOP_AFTER)"; exit 0; }
if ! grep -q 'GPU training: ON' "$OUT/configure.log"; then
  mark "gpu path" "WARNING: GPU training OFF (no CUDA LibTorch seen): gpu_test will not exist"
fi
grep -q 'c10d NCCL: ON' "$OUT/configure.log" || mark "nccl" "WARNING: c10d NCCL OFF (nccl.h not found)"

# --- 4. build what the gpu tests and the benchmark run ----------------------------
# BUILD_TARGETS (space-separated) builds less: e.g. "train_image_classifier gpu_test".
read -r -a TARGETS <<<"${BUILD_TARGETS:-train_image_classifier eval_image_classifier convert_dataset allreduce_bench}"
if [ -z "${BUILD_TARGETS:-}" ] && grep -q 'GPU training: ON' "$OUT/configure.log"; then
  TARGETS=(gpu_test "${TARGETS[@]}")
fi
JOBS=${JOBS:-$(nproc)}
tb=$(date +%s)
if run_logged "$OUT/build.log" $(($(left) - 20)) cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}"; then
  mark build "ok ($(($(date +%s) - tb))s, -j$JOBS)"
else
  rc=$?
  mark build "FAILED (exit $rc after $(($(date +%s) - tb))s; 124 = out of time: a rerun continues)"
  grep -n -m 12 -B 2 -A 10 -E 'error:|undefined reference|FAILED:' "$OUT/build.log" | head -120
  tail -n 15 "$OUT/build.log"
  exit 1
fi
log "libraries not found at run time (none listed = all found), without LD_LIBRARY_PATH:"
BENCH_KEEP_LD=0
for b in "$BUILD_DIR"/bin/*; do
  [ -x "$b" ] || continue
  nf=$(env -u LD_LIBRARY_PATH ldd "$b" 2>&1 | grep 'not found')
  [ -n "$nf" ] || continue
  sed "s|^|  $(basename "$b"):|" <<<"$nf"
  # bench runs allreduce_bench without the prefix's libraries: keep them then.
  [ "$(basename "$b")" = allreduce_bench ] && BENCH_KEEP_LD=1
done
log "not found with LD_LIBRARY_PATH (none listed = all found):"
for b in "$BUILD_DIR"/bin/*; do
  [ -x "$b" ] && ldd "$b" 2>&1 | grep 'not found' | sed "s|^|  $(basename "$b"):|"
done

[ "${STOP_AFTER:-}" = build ] && { mark stop "after build (STOP_AFTER)"; exit 0; }

# --- 5. ctest -L gpu -----------------------------------------------------------------
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  # The fixture that removes test_tmp keeps it (the trainers' logs) with this.
  export FASTNN_KEEP_TEST_TMP=1
  if run_logged "$OUT/ctest.log" $(($(left) - 15)) \
      ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --no-tests=error --timeout 300; then
    mark "ctest -L gpu" "ok: $(grep -E 'tests passed|Skipped|SKIPPED' "$OUT/ctest.log" | tr '\n' ' ')"
  else
    rc=$?
    mark "ctest -L gpu" "FAILED (exit $rc): $(grep -E 'tests passed|Failed' "$OUT/ctest.log" | tr '\n' ' ')"
  fi
  if [ -f "$BUILD_DIR/Testing/Temporary/LastTest.log" ]; then
    { echo; echo "==== LastTest.log"; cat "$BUILD_DIR/Testing/Temporary/LastTest.log"; } >>"$OUT/ctest.log"
  fi
  grep -E '^\[ *(RUN|OK|FAILED|SKIPPED) *\]|tests passed|Total Test time' "$OUT/ctest.log" | tail -n 40
  # The trainer logs the tests kept (test_tmp/gpu/*.log), for a failure's cause.
  find "$BUILD_DIR/test_tmp" -maxdepth 4 -name '*.log' 2>/dev/null | head -n 40 | while IFS= read -r f; do
    { echo "==== $f"; tail -n 40 "$f"; } >>"$OUT/ctest.log"
  done
fi

# --- 5b. c10d's NCCL group through allreduce_bench at world size 1 ---------------
if [ -x "$BUILD_DIR/bin/allreduce_bench" ]; then
  if run_logged "$OUT/ctest.log" 60 "$BUILD_DIR/bin/allreduce_bench" 0 1 $((29600 + RANDOM % 300)) 104857600 20 cuda; then
    mark "allreduce_bench nccl w=1" "ok: $(grep -E '^allreduce NCCL' "$OUT/ctest.log" | tail -1)"
  else
    mark "allreduce_bench nccl w=1" "FAILED (exit $?): $(tail -2 "$OUT/ctest.log" | tr '\n' ' ')"
  fi
fi

# --- 6. the benchmark, one part at a time ---------------------------------------------
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  PARTS=${BENCH_PARTS:-resnet,allreduce}
  FMNIST_DIR="$ROOT/.gpukit-fmnist/fashion-mnist"
  if [ -z "${BENCH_PARTS:-}" ] && [ -d "$FMNIST_DIR" ]; then PARTS="$PARTS,fmnist"; fi
  # The peer reads /usr/share/datasets/fashion-mnist (fixed path).
  if [[ ,$PARTS, == *,fmnist,* ]] && [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d "$FMNIST_DIR" ]; then
    mkdir -p /usr/share/datasets && ln -s "$FMNIST_DIR" /usr/share/datasets/fashion-mnist
  fi
  IFS=, read -r -a parts <<<"$PARTS"
  for part in "${parts[@]}"; do
    t=$(($(left) - 5))
    case $part in
      resnet) t=$((t - 40)) ;;  # leave the all-reduce its half minute
      fmnist) if [ "$t" -lt "${FMNIST_MIN_S:-240}" ]; then mark "bench $part" "skipped (${t}s left)"; continue; fi ;;
    esac
    echo "==== part $part" >>"$OUT/bench.log"
    # No LD_LIBRARY_PATH: the peers run as they are; the bench gives our
    # binaries BUILD_DIR/prefix's libraries itself.
    unset_ld=(-u LD_LIBRARY_PATH)
    [ "$BENCH_KEEP_LD" = 1 ] && unset_ld=()
    if run_logged "$OUT/bench.log" "$t" env "${unset_ld[@]}" PARTS="$part" \
        WARMUP="${BENCH_WARMUP:-10}" BATCH="${BENCH_BATCH:-256}" BUILD_DIR="$BUILD_DIR" \
        PYTHON="$PYTHON" PEER="$KIT/peer_pytorch.py" FMNIST_RAW="$FMNIST_DIR" \
        PYTHONUNBUFFERED=1 bash -c 'set -o pipefail; bench/gpu_vs_pytorch.sh "$1" | tee -a "$2"' _ \
        "${BENCH_STEPS:-30}" "$OUT/bench.md"; then
      mark "bench $part" ok
    else
      mark "bench $part" "FAILED or partial (exit $?)"
    fi
  done
  [ -f "$OUT/bench.md" ] && cat "$OUT/bench.md"
  # PARTS=profile's tables (the newest).
  prof=$(ls -t bench/results/gpu_profile_*.txt 2>/dev/null | sed -n 1p)
  [ -n "$prof" ] && cp "$prof" "$OUT/profile.txt"
fi
