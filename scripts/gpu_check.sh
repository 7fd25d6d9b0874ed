#!/usr/bin/env bash
# Builds this project against the LibTorch inside PyTorch's pip wheel and runs
# the GPU tests, then the unit tests: for a machine with an NVIDIA GPU, a
# python3 that imports a CUDA torch 2.7 or newer (the first C++11-ABI wheels;
# e.g. PyTorch 2.11 + CUDA 13), the CUDA toolkit (nvcc) and no internet.
#
# The other build dependencies (protobuf, gRPC, abseil, CLI11, nlohmann-json,
# GoogleTest, libjpeg-turbo, libpng, and cmake/ninja where absent) come from
# the system when installed, or from a folder of downloaded Debian packages:
# each .deb is unpacked with dpkg-deb -x into BUILD_DIR/prefix, which goes
# onto CMAKE_PREFIX_PATH, PATH, LD_LIBRARY_PATH and PKG_CONFIG_PATH.
#
# Usage: scripts/gpu_check.sh [--debs DIR] [-- EXTRA_CMAKE_ARGS...]
#   --debs DIR   folder of .deb files (default: shared/debs, else
#                ../shared/debs, when one exists; none: system packages only)
# Environment: BUILD_DIR (default build-gpu), PYTHON (default python3),
#              JOBS (default nproc).
# Exits non-zero when a step fails, naming it. Then: bench/gpu_vs_pytorch.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-gpu}
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
DEBS=""
for d in shared/debs ../shared/debs; do
  if [ -d "$d" ]; then DEBS=$d; break; fi
done
EXTRA_CMAKE_ARGS=()
while (($#)); do
  case $1 in
    --debs) DEBS=${2:?--debs needs a folder}; shift 2 ;;
    --) shift; EXTRA_CMAKE_ARGS=("$@"); break ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

current="start"
step() {
  current=$1
  echo "== gpu_check: $1"
}
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then echo "gpu_check: FAILED in step \"$current\" (exit $rc)" >&2; fi
}
trap on_exit EXIT

step "PyTorch and the GPU"
command -v nvidia-smi >/dev/null || { echo "gpu_check: nvidia-smi not found" >&2; exit 1; }
TORCH_PREFIX=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
"$PYTHON" - <<'EOF'
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"cxx11 ABI {torch.compiled_with_cxx11_abi()}, "
      f"cuda available {torch.cuda.is_available()}")
if torch.version.cuda is None:
    raise SystemExit(f"gpu_check: torch {torch.__version__} is a CPU-only build: install a CUDA "
                     "wheel of PyTorch 2.7 or newer")
# Debian's C++ libraries (protobuf, gRPC, abseil) use the C++11 ABI; a LibTorch
# built with the old one cannot link with them (undefined std::string symbols).
if not torch.compiled_with_cxx11_abi():
    raise SystemExit(
        f"gpu_check: torch {torch.__version__} was built with the pre-C++11 ABI "
        "(torch.compiled_with_cxx11_abi() is False); its LibTorch cannot link with the "
        "C++11-ABI libraries this project uses. PyTorch's wheels use the C++11 ABI from 2.7 on: "
        "install torch>=2.7, or build with the cxx11-ABI LibTorch zip "
        "(libtorch-cxx11-abi-shared-with-deps-*) through scripts/setup.sh --torch DIR")
if not torch.cuda.is_available():
    raise SystemExit("gpu_check: torch sees no GPU")
EOF
echo "LibTorch: $TORCH_PREFIX"
echo "GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed -n 1p)"

# LibTorch's CMake config finds the CUDA toolkit through nvcc (headers,
# cudart); the wheel does not carry it. Its usual place is taken when nvcc
# is not on PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null || {
  echo "gpu_check: nvcc not found: the build needs the CUDA toolkit (nvcc, headers, cudart)" \
    "of torch's CUDA $("$PYTHON" -c 'import torch; print(torch.version.cuda)'), which the" \
    "wheel does not carry; install it (NVIDIA's cuda-toolkit-X-Y package, or Debian's" \
    "nvidia-cuda-toolkit) and put its bin/ on PATH" >&2
  exit 1
}
echo "nvcc: $(nvcc --version | tail -1)"

# PyTorch's NCCL wheel (nvidia-nccl-*, under the nvidia/ namespace package):
# link the communicator against the same NCCL that torch loads. CMake's own
# search runs when it is absent.
NCCL_ARGS=()
nccl_dir=""
while IFS= read -r d; do
  h=$(find "$d" -maxdepth 3 -path '*/include/nccl.h' 2>/dev/null | sed -n 1p || true)
  if [ -n "$h" ]; then nccl_dir=$(dirname "$(dirname "$h")"); break; fi
done < <("$PYTHON" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null || true)
if [ -n "$nccl_dir" ]; then
  for lib in "$nccl_dir"/lib/libnccl.so "$nccl_dir"/lib/libnccl.so.*; do
    if [ -f "$lib" ]; then
      NCCL_ARGS=("-DNCCL_LIBRARY=$lib" "-DNCCL_INCLUDE_DIR=$nccl_dir/include")
      echo "NCCL (pip): $lib"
      break
    fi
  done
fi

PREFIX="$PWD/$BUILD_DIR/prefix"
if [ -n "$DEBS" ]; then
  step "unpack the Debian packages in $DEBS"
  mkdir -p "$PREFIX"
  n=0
  for deb in "$DEBS"/*.deb; do
    [ -f "$deb" ] || continue
    dpkg-deb -x "$deb" "$PREFIX"
    n=$((n + 1))
  done
  echo "unpacked $n packages into $PREFIX"
  # Absolute links (/usr/lib/...) point into the prefix instead, where the
  # target was unpacked there.
  while IFS= read -r link; do
    target=$(readlink "$link")
    case $target in
      /*) if [ -e "$PREFIX$target" ]; then ln -sfn "$PREFIX$target" "$link"; fi ;;
    esac
  done < <(find "$PREFIX" -type l)
  # pkg-config files say prefix=/usr.
  find "$PREFIX" -name '*.pc' -exec sed -i "s|^prefix=/usr\$|prefix=$PREFIX/usr|" {} +
fi

CMAKE_PREFIXES="$TORCH_PREFIX"
if [ -d "$PREFIX/usr" ]; then
  CMAKE_PREFIXES="$CMAKE_PREFIXES;$PREFIX/usr"
  export PATH="$PREFIX/usr/bin:$PATH"
  for d in "$PREFIX/usr/lib" "$PREFIX"/usr/lib/*-linux-gnu; do  # the last one ends up first
    [ -d "$d" ] || continue
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -d "$d/pkgconfig" ]; then
      export PKG_CONFIG_PATH="$d/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    fi
  done
  if [ -d "$PREFIX/usr/share/pkgconfig" ]; then
    export PKG_CONFIG_PATH="$PREFIX/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  fi
fi

step "build tools"
for tool in cmake ninja; do
  command -v "$tool" >/dev/null || {
    echo "gpu_check: $tool not found (install it, or put its .deb in the --debs folder)" >&2
    exit 1
  }
done
echo "$(cmake --version | sed -n 1p), ninja $(ninja --version)"

# What scripts/setup.sh does for the Debian LibTorch, with PyTorch's instead.
# Only PyTorch 2.7 and newer wheels are built with _GLIBCXX_USE_CXX11_ABI=1,
# as Debian is (older ones were refused above): nothing to add.
step "configure ($BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$CMAKE_PREFIXES" "${NCCL_ARGS[@]}" "${EXTRA_CMAKE_ARGS[@]}"

step "build (-j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"

# Both labels run even when the first fails; a label that selects no test is
# a failure (a GPU check that ran nothing proves nothing).
failed=()
for label in gpu unit; do
  step "ctest -L $label"
  if ! (cd "$BUILD_DIR" && ctest -L "$label" --output-on-failure --no-tests=error --timeout 900); then
    failed+=("ctest -L $label")
  fi
done
if ((${#failed[@]})); then
  current="${failed[*]}"
  exit 1
fi
current="done"
echo "gpu_check: all steps passed; next: bench/gpu_vs_pytorch.sh"
