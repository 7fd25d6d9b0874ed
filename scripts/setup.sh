#!/usr/bin/env bash
# Installs every Debian package the project needs (only what is missing, so a
# second run is quick) and builds into build/ with Ninja (+ ccache).
# Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libgloo-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libcli11-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  nlohmann-json3-dev libgtest-dev
  libjpeg-turbo-progs bc
  dataset-fashion-mnist
  openssl iproute2
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# interop_test runs @roboflow/tfrecords under Node.js (npm installs it into
# the build tree); any Node.js with npm will do, Debian's or another.
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${1:-}" = "--no-build" ] && exit 0

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# Each LibTorch translation unit needs ~1.5 GB to compile; two jobs fit.
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
