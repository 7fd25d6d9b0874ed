#!/usr/bin/env bash
# Every peer row of docs/performance.md against the strongest peer, one
# command: each benchmark script runs with its peer on the
# newest PyTorch from PyPI (PEER_PYTHON=pypi, bench/peer_env.sh) and ours
# built against that PyTorch's LibTorch (BUILD_DIR=build-pypi, made by
# `BUILD_DIR=build-pypi scripts/setup.sh --torch-pypi`), one after the other,
# each with its own interleaved rounds. Each script's output goes to
# bench/results/<row>_<UTC time>.txt as well as to the terminal.
#
# Rows (ROWS, default all, in this order):
#   strongest  bench/strongest_peer.sh ROUNDS (lenet 1 epoch = the
#              fmnist_vs_pytorch row; resnet50 = the resnet50_vs_pytorch row;
#              both builds, every peer variant)
#   tta        ROUNDS=ROUNDS bench/time_to_accuracy.sh
#   recipe     ROUNDS=ROUNDS bench/fmnist_recipe_vs_pytorch.sh
#   ddp        ROUNDS=ROUNDS bench/ddp_scaling.sh 20 resnet50
#   input      REPEAT=ROUNDS bench/input_pipeline.sh
# The rows without a PyTorch peer (gflops.sh: the machine's own sgemm;
# fmnist_recipe_tools.sh and input_cache.sh: ours against ours) are not run.
# Usage: bench/rows_vs_strongest.sh [ROUNDS=3]   (ROWS="tta ddp" for some)
# All rows take hours on a small machine, which must be quiet meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
ROWS=${ROWS:-strongest tta recipe ddp input}
export PEER_PYTHON=pypi BUILD_DIR=${BUILD_DIR:-build-pypi}
for b in train_image_classifier eval_image_classifier convert_dataset input_bench allreduce_bench; do
  [ -x "$BUILD_DIR/bin/$b" ] || {
    echo "rows_vs_strongest: $BUILD_DIR/bin/$b missing:" \
      "FASTNN_BUILD_BENCH=1 BUILD_DIR=$BUILD_DIR scripts/setup.sh --torch-pypi" >&2
    exit 2
  }
done
mkdir -p bench/results
failed=""
for row in $ROWS; do
  out=bench/results/${row}_$(date -u +%Y-%m-%dT%H%MZ).txt
  case $row in
    strongest) cmd=(env WHEEL_BUILD_DIR="$BUILD_DIR" BUILD_DIR=build bench/strongest_peer.sh "$ROUNDS") ;;
    tta) cmd=(env ROUNDS="$ROUNDS" bench/time_to_accuracy.sh) ;;
    recipe) cmd=(env ROUNDS="$ROUNDS" bench/fmnist_recipe_vs_pytorch.sh) ;;
    ddp) cmd=(env ROUNDS="$ROUNDS" bench/ddp_scaling.sh 20 resnet50) ;;
    input) cmd=(env REPEAT="$ROUNDS" bench/input_pipeline.sh) ;;
    *) echo "rows_vs_strongest: unknown row '$row' (strongest tta recipe ddp input)" >&2; exit 2 ;;
  esac
  echo "== $row: ${cmd[*]} (PEER_PYTHON=pypi BUILD_DIR=$BUILD_DIR) -> $out"
  "${cmd[@]}" 2>&1 | tee "$out" || failed+="$row "
done
[ -z "$failed" ] || { echo "rows_vs_strongest: failed: $failed" >&2; exit 1; }
