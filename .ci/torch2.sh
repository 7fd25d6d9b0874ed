#!/usr/bin/env bash
# CI's second LibTorch: the project built against Debian 13's CUDA LibTorch
# 2.6 (libtorch-cuda-dev from contrib, the CUDA 12.4 toolkit and NCCL from
# non-free), in a debootstrap chroot, without a GPU. Everything compiles and
# links, GPU training included (FASTNN_WITH_CUDA); then the tests that need
# no device run: the unit label (but the model zoo's suites, which the host
# leg runs), and the gpu label, whose cases report themselves skipped here.
#
# Only Debian's packages, through Debian's mirror. The one thing Debian
# cannot provide offline is cuDNN (nvidia-cudnn is a script that downloads
# it from NVIDIA): a placeholder package satisfies the dependency and
# .ci/cudnn_stub.sh makes a library with cuDNN's symbols so that LibTorch
# links and loads. cuDNN is only called on CUDA tensors, so never here.
#
# The chroot (~8 GiB) lives outside the clone, in
# $FASTNN_CHROOT_CACHE/trixie-cuda-KEY (default /var/cache/fastnn), KEY being
# a hash of its package list and of .ci/cudnn_stub.sh: every clone on the
# machine, CI's fresh ones included, finds it, and it is built anew only when
# that list changes (older trixie-cuda-* chroots are then removed, once
# nothing is mounted in them). Its own ccache (/root/.ccache inside it)
# persists with it; the project is always mounted at /src, so a fresh
# clone's build is all cache hits when the tree is unchanged. Only the
# targets the tests need are built (tests_torch2: the unit tests but the
# model zoo's, which the host leg runs, gpu_test and train_image_classifier),
# plus eval_image_classifier and allreduce_bench, the other binaries that
# link LibTorch's CUDA side. Every library is compiled and linked, at -O1:
# this leg checks that the code compiles, links and passes its unit tests
# against LibTorch 2.6, not its speed, and GCC compiles faster at -O1
# than at the Release build's -O3 (the host leg builds at -O3).
#
# Usage: .ci/torch2.sh [ctest arguments]   (default: -L 'unit|gpu' -LE zoo)
# Environment: FASTNN_CHROOT (a chroot directory to use as it is),
# FASTNN_CHROOT_CACHE, DEBIAN_MIRROR, JOBS. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  libtorch-cuda-dev libgloo-cuda-dev nvidia-cuda-toolkit libnccl-dev
  build-essential binutils cmake ninja-build ccache pkg-config libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libcli11-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  nlohmann-json3-dev libleveldb-dev libsnappy-dev libgtest-dev libjpeg-turbo-progs bc openssl iproute2
)
CACHE=${FASTNN_CHROOT_CACHE:-/var/cache/fastnn}
KEY=$({ echo "${PACKAGES[*]}"; cat .ci/cudnn_stub.sh; } | sha256sum | cut -c1-12)
ROOT=${FASTNN_CHROOT:-$CACHE/trixie-cuda-$KEY}
# The chroot is ready when this file lists exactly these packages.
MARKER=$ROOT/.fastnn-packages

log() { echo "torch2: $*"; }
t0=$SECONDS

if ! command -v debootstrap >/dev/null; then scripts/apt_install.sh torch2 debootstrap; fi
$SUDO mkdir -p "$(dirname "$ROOT")"
# One CI run at a time uses (and may build) the chroot.
exec 9>"$ROOT.lock"
flock 9

# Removes a chroot directory, but never through a mount point: a bind mount
# of /dev or of a clone left by a killed run is unmounted first, and the
# directory is kept if anything is still mounted under it.
remove_chroot() {
  local dir=$1 m
  for m in $(findmnt -rn -o TARGET | grep -F "$dir/" | sort -r); do
    $SUDO umount -l "$m" 2>/dev/null || true
  done
  if findmnt -rn -o TARGET | grep -qF "$dir/"; then
    log "not removing $dir: something is still mounted in it"
    return 0
  fi
  $SUDO rm -rf "$dir"
}
if [ -z "${FASTNN_CHROOT:-}" ]; then
  for old in "$CACHE"/trixie-cuda-*; do
    [ -d "$old" ] && [ "$old" != "$ROOT" ] || continue
    log "removing $old (an older package list)"
    remove_chroot "$old"
    $SUDO rm -f "$old.lock" "$old.debootstrap.log"
  done
fi
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  log "debootstrap trixie into $ROOT"
  remove_chroot "$ROOT"
  $SUDO debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
    { tail -20 "$ROOT.debootstrap.log"; exit 1; }
fi

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    $SUDO umount -l "${mounted[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
mount_in() {  # mount_in TARGET mount-args...
  local target=$ROOT/$1
  shift
  $SUDO mkdir -p "$target"
  if ! mountpoint -q "$target"; then
    $SUDO mount "$@" "$target"
    mounted+=("$target")
  fi
}
mount_in proc -t proc proc
mount_in dev --rbind /dev
mount_in src --bind "$SRC"
in_root() { $SUDO chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -c "$1"; }

if [ ! -f "$MARKER" ] || [ "$(cat "$MARKER")" != "${PACKAGES[*]}" ]; then
  # The installed packages take about 8 GiB and their downloads about 3
  # more while they unpack; running out half-way leaves dpkg's errors for
  # every later package, so say it first.
  need_kib=$((12 * 1024 * 1024))
  free_kib=$(df -Pk "$ROOT" | awk 'NR == 2 { print $4 }')
  if [ "$free_kib" -lt "$need_kib" ]; then
    echo "torch2: $((free_kib / 1024 / 1024)) GiB free under $ROOT, the chroot needs about 12 GiB" >&2
    echo "torch2: free some space, or point FASTNN_CHROOT at a larger disk" >&2
    exit 1
  fi
  log "installing LibTorch 2.6 (CUDA), the CUDA toolkit and the build's packages"
  echo "deb $MIRROR trixie main contrib non-free non-free-firmware" |
    $SUDO tee "$ROOT/etc/apt/sources.list" >/dev/null
  $SUDO rm -f "$ROOT/etc/apt/sources.list.d/debian.sources"
  # The placeholder for NVIDIA's cuDNN download script (see above).
  stub=$ROOT/tmp/nvidia-cudnn-placeholder
  $SUDO mkdir -p "$stub/DEBIAN"
  printf '%s\n' "Package: nvidia-cudnn" "Version: 9.99.0~fastnn-placeholder" \
    "Architecture: amd64" "Maintainer: FastNN-C++ CI <ci@localhost>" \
    "Description: placeholder for the cuDNN download script (CI has no network to NVIDIA)" |
    $SUDO tee "$stub/DEBIAN/control" >/dev/null
  $SUDO dpkg-deb --build "$stub" "$ROOT/tmp/nvidia-cudnn-placeholder.deb" >/dev/null
  in_root "dpkg -i /tmp/nvidia-cudnn-placeholder.deb >/dev/null &&
           apt-get update -qq &&
           apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} >/tmp/apt.log 2>&1 ||
           { tail -30 /tmp/apt.log; exit 1; }"
  in_root "/src/.ci/cudnn_stub.sh /usr/lib/x86_64-linux-gnu && apt-get clean"
  echo "${PACKAGES[*]}" | $SUDO tee "$MARKER" >/dev/null
fi
log "chroot ready after $((SECONDS - t0)) s"

BUILD=build-torch2
in_root "cd /src && export CCACHE_DIR=/root/.ccache &&
  { [ -f $BUILD/build.ninja ] || cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DFASTNN_BUILD_BENCH=ON \
    -DCMAKE_CXX_FLAGS_RELEASE='-O1 -DNDEBUG' -DCMAKE_C_FLAGS_RELEASE='-O1 -DNDEBUG' >/tmp/cmake.log 2>&1 ||
    { cat /tmp/cmake.log; exit 1; }; } &&
  grep -E 'LibTorch:|NCCL:|CUDA toolkit:' /tmp/cmake.log 2>/dev/null || true"
log "building the tested targets against LibTorch 2.6 + CUDA (${JOBS:-2} jobs)"
in_root "cd /src && export CCACHE_DIR=/root/.ccache && ccache -z >/dev/null &&
  targets='tests_torch2 eval_image_classifier allreduce_bench' &&
  cmake --build $BUILD -j ${JOBS:-2} --target \$targets"
in_root "CCACHE_DIR=/root/.ccache ccache -s | grep -E 'Hits|Misses'" || true
log "built after $((SECONDS - t0)) s"

ctest_args=("$@")
if ((${#ctest_args[@]} == 0)); then ctest_args=(-L 'unit|gpu' -LE zoo); fi
quoted=$(printf "'%s' " "${ctest_args[@]}")
# Two tests at a time, one thread each: LibTorch's OpenMP threads of two
# processes on two cores would otherwise spin against each other.
# oneDNN's kernels held at AVX2: on an AVX-512 CPU with AMX LibTorch 2.6's
# fp32 convolutions sum in another order, enough to take lenet's conv1 past
# the Gloo equivalence test's 1e-5 (2 workers x batch b = 1 worker x 2b);
# held at AVX2 it passes. The leg's results then do not depend on which
# CPU the machine CI runs on has. The host leg (LibTorch 1.13) is not held.
in_root "cd /src/$BUILD && OMP_NUM_THREADS=1 ONEDNN_MAX_CPU_ISA=AVX2 ctest -j 2 --output-on-failure --timeout 900 $quoted"
log "done after $((SECONDS - t0)) s"
