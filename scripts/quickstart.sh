#!/usr/bin/env bash
# The main job on the embedded default: converts Fashion-MNIST (Debian's
# dataset-fashion-mnist) once, trains configs/quickstart.cfg (or
# $QUICKSTART_CONFIG), evaluates on
# the 10,000 test images and prints the test accuracy.
# Usage: scripts/quickstart.sh [--KEY=VALUE ...]   (overrides for training)
#        QUICKSTART_CONFIG=configs/fashion_mnist_lenet.cfg scripts/quickstart.sh
#        (up to 7 epochs, stopping at the first evaluation reaching 0.92 test
#        accuracy; training times: docs/performance.md)
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$(date +%s)
# Only the three binaries it runs, and no test-only package.
scripts/setup.sh train_image_classifier eval_image_classifier convert_dataset
t1=$(date +%s)
echo "quickstart: set-up and build took $((t1 - t0)) s"
# Training speed differs severalfold between CPUs: say which.
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
isa=$(grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "quickstart: CPU ${cpu:-unknown}, $(nproc) cores, ${isa:-no AVX2}"

BIN=${BUILD_DIR:-build}/bin
DATA=data/fashion_mnist
RUN=runs/quickstart-$(date +%Y%m%d-%H%M%S)
CONFIG=${QUICKSTART_CONFIG:-configs/quickstart.cfg}

# convert_dataset refuses to overwrite: convert once.
[ -f "$DATA/labels.txt" ] || "$BIN/convert_dataset" --dataset_name fashion_mnist \
  --input /usr/share/datasets/fashion-mnist --dataset_dir "$DATA"
t2=$(date +%s)
"$BIN/train_image_classifier" --config "$CONFIG" \
  --dataset_dir="$DATA" --train_dir="$RUN" "$@"
t3=$(date +%s)
"$BIN/eval_image_classifier" --config "$CONFIG" \
  --dataset_dir="$DATA" --checkpoint_path="$RUN" | tee "$RUN/eval.txt"
t4=$(date +%s)

acc=$(sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p' "$RUN/eval.txt")
echo
echo "quickstart: train_dir $RUN"
echo "quickstart: convert $((t2 - t1)) s, train $((t3 - t2)) s, eval $((t4 - t3)) s," \
     "total $((t4 - t1)) s (set-up excluded)"
echo "quickstart: Fashion-MNIST test accuracy = $acc"
