#!/usr/bin/env bash
# Training throughput on Fashion-MNIST beside the PyTorch peer, same run.
#
# Peer:  ../shared/bench/peer_pytorch.py fmnist EPOCHS 2  (LeNet-style net, batch
#        128, SGD momentum, data preloaded as tensors, 2 threads)
# Ours:  train_image_classifier on configs/fashion_mnist_momentum.cfg with the peer's batch
#        size (128) for the same number of epochs, reading TFRecords through
#        the full pipeline (PNG decode + lenet preprocessing), 2 threads.
# Ours runs twice: fp32 (the config's use_fp16=False) and with use_fp16=True,
# which is bfloat16 autocast on a CPU with AVX512_BF16 and fp32 elsewhere (the
# log line says which; the peer stays fp32).
# Prints both images/sec, both test accuracies and the ratios.
# Usage: bench/fmnist_vs_pytorch.sh [EPOCHS=1]
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-1}
# shellcheck source=bench/fmnist_common.sh
. bench/fmnist_common.sh

peer=$("$PEER_PYTHON" "$PEER" fmnist "$EPOCHS" 2 | tail -1)
echo "peer: $peer"
steps=$((60000 / 128 * EPOCHS))
peer_ips=$(echo "$peer" | sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p')
peer_acc=$(echo "$peer" | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
for fp16 in False True; do
  rm -rf "$OUT/run"
  "$BIN/train_image_classifier" --config configs/fashion_mnist_momentum.cfg --dataset_dir="$DATA" \
    --train_dir="$OUT/run" --batch_size=128 --learning_rate=0.02 --use_fp16=$fp16 \
    --num_epochs_per_decay=1 --stop_at_step=$steps --log_loss_every_n_iters=0 2>&1 \
    | grep -E '^Stopped|use_fp16=True'
  ours=$(sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p' "$OUT/run/metrics.json" |
    awk '{ printf "%.1f", $1 }')
  acc=$("$BIN/eval_image_classifier" --config configs/fashion_mnist_momentum.cfg --dataset_dir="$DATA" \
    --checkpoint_path="$OUT/run" | sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p')
  ratio=$(awk -v a="$ours" -v b="$peer_ips" 'BEGIN { printf "%.2f", a / b }')
  echo "ours (use_fp16=$fp16): images_per_sec=$ours test_acc=$acc (epochs=$EPOCHS batch=128 threads=2)"
  echo "ratio (use_fp16=$fp16): fastnn-cpp / pytorch images/sec = $ratio; test accuracy $acc vs $peer_acc"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
