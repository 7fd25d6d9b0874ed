#!/usr/bin/env bash
# Installs the Debian packages a job needs (only what is missing, so a second
# run is quick) and builds into build/ with Ninja (+ ccache).
# Usage: scripts/setup.sh [--no-build] [--tests] [--torch DIR | --torch-pypi] [TARGET ...]
#   TARGET ...   build only these CMake targets (the quickstart names its
#                three binaries); default: everything
#   --tests      also install what the tests need (GoogleTest, Open MPI,
#                Slurm + munge, Chromium, npm, ...); scripts/test.sh sets it.
#                Without it no test-only package is installed and, when
#                GoogleTest is absent, the tests are not configured.
#   --torch DIR  build against the LibTorch in DIR (a CUDA LibTorch 2.x for
#                GPUs, e.g. the one in PyTorch's wheel:
#                python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
#                instead of Debian's; Debian's libtorch-dev is then not
#                installed. Same as CMAKE_PREFIX_PATH=DIR.
#   --torch-pypi build against the CPU libraries of PyPI's newest torch
#                wheel (scripts/torch-pypi-requirements.txt, pinned; made
#                into .cache/torch_pypi/ by scripts/uv_venv.sh: about 5 GB
#                downloaded once; the benchmarks' PyTorch peer uses it too) instead of Debian's LibTorch 1.13: faster
#                training on CPUs (docs/performance.md), a build of C++20
#                units against larger headers. The binaries find the wheel's
#                libraries through their RUNPATH: keep .cache/ where it is.
#                FASTNN_TORCH_PYPI=1 in the environment does the same for
#                every script that calls this one (quickstart, tests).
# Environment: BUILD_DIR (build), JOBS (2), FASTNN_BUILD_BENCH (0; 1 also
#   builds the benchmark binaries bench/ uses: model_flops, input_bench,
#   allreduce_bench; .ci/run sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

NO_BUILD=0
TESTS=0
TARGETS=()
TORCH_DIR=${FASTNN_TORCH_DIR:-}
TORCH_PYPI=${FASTNN_TORCH_PYPI:-0}
while (($#)); do
  case $1 in
    --no-build) NO_BUILD=1 ;;
    --tests) TESTS=1 ;;
    --torch) TORCH_DIR=${2:?--torch needs a directory}; shift ;;
    --torch=*) TORCH_DIR=${1#--torch=} ;;
    --torch-pypi) TORCH_PYPI=1 ;;
    -*) echo "setup: unknown argument $1 (usage: scripts/setup.sh [--no-build] [--tests] [--torch DIR | --torch-pypi] [TARGET ...])" >&2
       exit 2 ;;
    *) TARGETS+=("$1") ;;
  esac
  shift
done
if [ -n "$TORCH_DIR" ] && ((TORCH_PYPI)); then
  echo "setup: --torch and --torch-pypi name two LibTorches: give one" >&2
  exit 2
fi
if [ -n "$TORCH_DIR" ] && [ ! -d "$TORCH_DIR" ]; then
  echo "setup: --torch $TORCH_DIR is not a directory" >&2
  exit 2
fi

# What the binaries need to build and run, and the quickstart's data set.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libgloo-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libcli11-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  nlohmann-json3-dev libleveldb-dev libsnappy-dev libonnx-dev
  dataset-fashion-mnist
)
# What only the tests use: the format check (clang-format 14), real launchers (mpirun, Slurm), namespaces, TLS
# certificates, a browser for the sweep report, JPEG tools for fixtures,
# torchvision (with PyTorch) as the reference for the augmentation ops.
TEST_PACKAGES=(
  libgtest-dev libjpeg-turbo-progs bc clang-format-14
  openssl iproute2 openmpi-bin slurm-wlm munge chromium
  python3-torchvision
)
if ((TESTS)); then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  # Another LibTorch brings its own c10d (and Gloo).
  if [ -n "$TORCH_DIR" ] && { [ "$p" = libtorch-dev ] || [ "$p" = libgloo-dev ]; }; then continue; fi
  # The wheel has no Gloo headers: Debian's libgloo-dev stays.
  if ((TORCH_PYPI)) && [ "$p" = libtorch-dev ]; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# interop_test runs @roboflow/tfrecords under Node.js (npm installs it into
# the build tree); any Node.js with npm will do, Debian's or another.
if ((TESTS)) && ! command -v npm >/dev/null; then missing+=(npm); fi
if ((${#missing[@]})); then scripts/apt_install.sh setup "${missing[@]}"; fi

[ "$NO_BUILD" = 1 ] && exit 0

BUILD_DIR=${BUILD_DIR:-build}
# Configured every time (a few seconds; nothing is rebuilt when nothing
# changed): a build first configured without GoogleTest picks the tests up
# once --tests has installed it.
mkdir -p "$BUILD_DIR"
# One configure and build at a time per build directory: .ci/run runs its two
# oracle legs side by side, and each builds its binaries (a no-op after the
# test leg, but two CMakes or Ninjas in one tree race on its files).
exec 9>"$BUILD_DIR/.setup.lock"
flock 9
# A build directory switches LibTorch when told to: FASTNN_TORCH_WHEEL is
# always given (empty: not the wheel).
BENCH=OFF; [ "${FASTNN_BUILD_BENCH:-0}" = 1 ] && BENCH=ON
TORCH_ARGS=(-DFASTNN_TORCH_WHEEL= -DFASTNN_BUILD_BENCH=$BENCH)
if [ -n "$TORCH_DIR" ]; then TORCH_ARGS+=(-DCMAKE_PREFIX_PATH="$(cd "$TORCH_DIR" && pwd)"); fi
if ((TORCH_PYPI)); then
  venv=$(scripts/uv_venv.sh torch_pypi scripts/torch-pypi-requirements.txt \
    "PyPI's newest torch and torchvision: about 5 GB, once")
  TORCH_ARGS[0]=-DFASTNN_TORCH_WHEEL="$PWD/$(echo "$venv"/lib/python3*/site-packages/torch)"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${TORCH_ARGS[@]}" \
  >"$BUILD_DIR/configure.log" 2>&1 || { cat "$BUILD_DIR/configure.log"; exit 1; }
grep -E 'ccache:|LibTorch:|GoogleTest' "$BUILD_DIR/configure.log" || true
# Each LibTorch translation unit needs ~1.5 GB to compile; two jobs fit.
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" ${TARGETS[@]:+--target "${TARGETS[@]}"}
