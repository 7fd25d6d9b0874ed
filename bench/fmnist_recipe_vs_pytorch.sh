#!/usr/bin/env bash
# Time to accuracy on Fashion-MNIST beside the PyTorch peer, same run: our
# recipe (configs/fashion_mnist_lenet.cfg: TF-slim's lenet from TFRecords,
# the whole input pipeline) against the peer's 12 epochs
# (../shared/bench/peer_pytorch.py fmnist 12 2: a LeNet-style net, tensors
# preloaded in memory, batch 128, SGD momentum lr 0.05, 2 threads).
#
# Both figures are training wall time only: the peer times its epoch loop,
# we take metrics.json's wall_secs (the steps, not start-up, the final
# checkpoint or evaluation). Test accuracy on the 10,000 test images: the
# peer's own evaluation, ours with eval_image_classifier (the moving
# averages when the recipe keeps them). The goal: >= 0.92 test accuracy in
# less training time than the peer.
# Usage: bench/fmnist_recipe_vs_pytorch.sh [PEER_EPOCHS=12] [CONFIG]
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-12}
CONFIG=${2:-configs/fashion_mnist_lenet.cfg}
# shellcheck source=bench/fmnist_common.sh
. bench/fmnist_common.sh

echo "start: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
peer=$("$PEER_PYTHON" "$PEER" fmnist "$EPOCHS" 2 | tail -1)
echo "peer: $peer"
peer_ips=$(echo "$peer" | sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p')
peer_acc=$(echo "$peer" | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
# The peer's loop sees EPOCHS x floor(60000 / 128) batches of 128.
peer_secs=$(awk -v e="$EPOCHS" -v ips="$peer_ips" 'BEGIN { printf "%.1f", e * 468 * 128 / ips }')

"$BIN/train_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" \
  --train_dir="$OUT/run" --result_format=none | grep '^Stopped' || true
ours_secs=$(sed -n 's/.*"wall_secs": \([0-9.]*\).*/\1/p' "$OUT/run/metrics.json" |
  awk '{ printf "%.1f", $1 }')
ours_ips=$(sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p' "$OUT/run/metrics.json" |
  awk '{ printf "%.1f", $1 }')
steps=$(sed -n 's/.*"final_step": \([0-9]*\).*/\1/p' "$OUT/run/metrics.json")
acc=$("$BIN/eval_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" \
  --checkpoint_path="$OUT/run" | sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p')

echo "ours: training_secs=$ours_secs images_per_sec=$ours_ips steps=$steps test_acc=$acc ($CONFIG)"
echo "peer: training_secs=$peer_secs images_per_sec=$peer_ips epochs=$EPOCHS test_acc=$peer_acc"
ratio=$(awk -v a="$ours_secs" -v b="$peer_secs" 'BEGIN { printf "%.2f", a / b }')
echo "ratio: fastnn-cpp / pytorch training time = $ratio; test accuracy $acc vs $peer_acc"
verdict=$(awk -v a="$acc" -v t="$ratio" 'BEGIN { print (a >= 0.92 && t < 1) ? "met" : "not met" }')
echo "goal (>= 0.92 test accuracy in less training time than the peer): $verdict"
echo "end: $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
