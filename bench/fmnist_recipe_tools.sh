#!/usr/bin/env bash
# Does the modern recipe's toolbox (an augmentation policy,
# random erasing, mixup/cutmix) beat the plain Fashion-MNIST recipe
# (configs/fashion_mnist_lenet.cfg) at equal wall time?
#
# Both runs train side by side, one core each (1 intra-op thread, 1
# preprocessing thread), for the same EPOCHS with the same schedule, so they
# share the machine's conditions; each prints its training wall time and its
# test accuracy (eval_image_classifier with the recipe's settings: the test
# split, moving averages).
# Usage: bench/fmnist_recipe_tools.sh [EPOCHS=4]
#   TOOLS="--augment_policy=trivialaugment ..." replaces the toolbox tried.
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-4}
TOOLS=${TOOLS:---augment_policy=trivialaugment --random_erasing_prob=0.25 --mixup_alpha=0.2 --cutmix_alpha=1.0}
FMNIST_PEER=0 source bench/fmnist_common.sh

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1);" \
  "$(grep -m1 -o -w -E 'avx512_bf16|avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
steps=$((EPOCHS * 60000 / 128))
common=(--config configs/fashion_mnist_lenet.cfg --dataset_dir="$DATA" --stop_at_step="$steps"
        --num_epochs_per_decay="$EPOCHS" --intra_op_parallelism_threads=1
        --num_preprocessing_threads=1 --save_checkpoints_steps=0 --log_loss_every_n_iters=0
        --eval_every_n_iters=0 --stop_at_accuracy=None)
train() {  # NAME ARGS...
  local name=$1; shift
  "$BIN/train_image_classifier" "${common[@]}" --train_dir="$OUT/$name" --result_format=none \
    "$@" >"$OUT/$name.log" 2>&1
}
train plain &
train tools $TOOLS &
wait
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in plain tools; do
  secs=$(sed -n 's/.*"wall_secs": \([0-9.]*\).*/\1/p' "$OUT/$name/metrics.json" |
    awk '{ printf "%.1f", $1 }')
  acc=$("$BIN/eval_image_classifier" --config configs/fashion_mnist_lenet.cfg \
    --dataset_dir="$DATA" --checkpoint_path="$OUT/$name" | sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p')
  echo "$name: epochs=$EPOCHS steps=$steps training_secs=$secs test_acc=$acc"
done
echo "tools: $TOOLS"
