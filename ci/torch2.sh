#!/usr/bin/env bash
# CI's second LibTorch: the project built against Debian 13's CUDA LibTorch
# 2.6 (libtorch-cuda-dev from contrib, the CUDA 12.4 toolkit and NCCL from
# non-free), in a debootstrap chroot, without a GPU. Everything compiles and
# links, GPU training included (FASTNN_WITH_CUDA); then the tests that need
# no device run: the unit label, and the gpu label, whose cases report
# themselves skipped here.
#
# Only Debian's packages, through Debian's mirror. The one thing Debian
# cannot provide offline is cuDNN (nvidia-cudnn is a script that downloads
# it from NVIDIA): a placeholder package satisfies the dependency and
# ci/cudnn_stub.sh makes a library with cuDNN's symbols so that LibTorch
# links and loads. cuDNN is only called on CUDA tensors, so never here.
#
# Usage: ci/torch2.sh [ctest arguments]   (default: -L 'unit|gpu')
# Environment: FASTNN_CHROOT (default .cache/trixie-cuda, kept between runs:
# a second run only builds), DEBIAN_MIRROR, JOBS. Needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
ROOT=${FASTNN_CHROOT:-$SRC/.cache/trixie-cuda}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  libtorch-cuda-dev libgloo-cuda-dev nvidia-cuda-toolkit libnccl-dev
  build-essential binutils cmake ninja-build ccache pkg-config libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libcli11-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  nlohmann-json3-dev libgtest-dev libjpeg-turbo-progs bc openssl iproute2
)
# The chroot is ready when this file lists exactly these packages.
MARKER=$ROOT/.fastnn-packages

log() { echo "torch2: $*"; }
t0=$SECONDS

if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends debootstrap
fi
mkdir -p "$SRC/.cache"
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  log "debootstrap trixie into $ROOT"
  $SUDO rm -rf "$ROOT"
  $SUDO mkdir -p "$(dirname "$ROOT")"
  $SUDO debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >"$SRC/.cache/debootstrap.log" 2>&1 ||
    { tail -20 "$SRC/.cache/debootstrap.log"; exit 1; }
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
  in_root "/src/ci/cudnn_stub.sh /usr/lib/x86_64-linux-gnu && apt-get clean"
  echo "${PACKAGES[*]}" | $SUDO tee "$MARKER" >/dev/null
fi
log "chroot ready after $((SECONDS - t0)) s"

BUILD=build-torch2
in_root "cd /src && export CCACHE_DIR=/root/.ccache &&
  { [ -f $BUILD/build.ninja ] || cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release >/tmp/cmake.log 2>&1 ||
    { cat /tmp/cmake.log; exit 1; }; } &&
  grep -E 'LibTorch:|NCCL:|CUDA toolkit:' /tmp/cmake.log 2>/dev/null || true"
log "building against LibTorch 2.6 + CUDA (${JOBS:-2} jobs)"
in_root "cd /src && export CCACHE_DIR=/root/.ccache && cmake --build $BUILD -j ${JOBS:-2}"
log "built after $((SECONDS - t0)) s"

ctest_args=("$@")
if ((${#ctest_args[@]} == 0)); then ctest_args=(-L 'unit|gpu'); fi
quoted=$(printf "'%s' " "${ctest_args[@]}")
# Two tests at a time, one thread each: LibTorch's OpenMP threads of two
# processes on two cores would otherwise spin against each other.
in_root "cd /src/$BUILD && OMP_NUM_THREADS=1 ctest -j 2 --output-on-failure --timeout 900 $quoted"
log "done after $((SECONDS - t0)) s"
