#!/usr/bin/env bash
# Makes .gpukit/ (git-ignored) in the repository root: what a GPU machine
# without internet needs to build this project against the LibTorch of its
# PyTorch wheel and run the gpu tests and bench/gpu_vs_pytorch.sh there —
# the Debian 12 packages of the other dependencies (apt-get download, never
# installed here), the Gloo headers the wheel lacks (from Debian's
# libgloo-dev), gRPC's missing re2 CMake config, run_gpu.sh, and the
# Fashion-MNIST peer script when ../shared/bench has it.
#
# Usage (repo root, a Debian 12 machine with apt): scripts/gpu_kit/make_kit.sh
# Then, on the GPU machine (the device tool: carry [".gpukit"], timeout_s
# <= 590): bash .gpukit/run_gpu.sh   (see its header for BUDGET, BENCH_*).
# About 21 MB; the files are replaced on each run.
set -euo pipefail
cd "$(dirname "$0")/../.."
KIT=.gpukit
PACKAGES=(
  libabsl-dev libabsl20220623 libc-ares-dev libc-ares2 libcli11-dev libgrpc++-dev libgrpc++1.51
  libgrpc-dev libgrpc29 libgtest-dev libjpeg62-turbo-dev libjpeg62-turbo libleveldb-dev
  libleveldb1d libpng-dev libpng16-16 libprotobuf-dev libprotobuf-lite32 libprotobuf32
  libprotoc32 libre2-9 libre2-dev libsnappy-dev libsnappy1v5 libssl-dev libssl3
  nlohmann-json3-dev protobuf-compiler-grpc protobuf-compiler zlib1g-dev zlib1g
)
rm -rf "$KIT/debs" "$KIT/gloo-include" "$KIT/cmake"
mkdir -p "$KIT/debs" "$KIT/cmake/re2" "$KIT/gloo-include"
(cd "$KIT/debs" && apt-get download "${PACKAGES[@]}")
# Epochs come as "%3a" in the file names: plain names travel everywhere.
for f in "$KIT"/debs/*%3a*; do [ -e "$f" ] && mv "$f" "${f//%3a/-}"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libgloo-dev && dpkg-deb -x libgloo-dev_*.deb x)
cp -r "$tmp/x/usr/include/gloo" "$KIT/gloo-include/"
cp scripts/gpu_kit/re2Config.cmake "$KIT/cmake/re2/"
cp scripts/gpu_kit/run_gpu.sh "$KIT/run_gpu.sh"
if [ -f ../shared/bench/peer_pytorch.py ]; then cp ../shared/bench/peer_pytorch.py "$KIT/"; fi
grep -qx '/.gpukit/' .gitignore || echo "make_kit: add /.gpukit/ to .gitignore" >&2
echo "make_kit: $KIT ($(du -sh "$KIT" | cut -f1)), $(ls "$KIT/debs" | wc -l) packages"
