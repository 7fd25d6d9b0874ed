#!/usr/bin/env bash
# resnet_v1_50 training throughput and peak memory beside the PyTorch peer,
# same run, same machine: batch 32 on synthetic data, 2 threads, 2 warm-up
# steps then STEPS timed steps; fp32 and use_fp16 (bf16 autocast on CPU),
# each with data_format NCHW and NHWC (channels-last).
# Ours prefetches 2 batches (FastNN's default of 32 batches holds ~600 MB
# of 224x224 images; the peer holds one batch).
#
# Peer: ../shared/bench/peer_pytorch.py train resnet50 32 STEPS 2
#       (torchvision resnet50, SGD momentum, weight decay, random tensors)
# Usage: bench/resnet50_vs_pytorch.sh [STEPS=5]
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/peer_python.sh
. bench/peer_python.sh
STEPS=${1:-5}
BIN=${BUILD_DIR:-build}/bin
PEER=${PEER:-../shared/bench/peer_pytorch.py}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

/usr/bin/time -f "%M" -o "$OUT/peer.rss" "$PEER_PYTHON" "$PEER" train resnet50 32 "$STEPS" 2 \
  > "$OUT/peer.txt"
peer_ips=$(sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p' "$OUT/peer.txt")
peer_mb=$(( $(cat "$OUT/peer.rss") / 1024 ))
echo "peer: $(cat "$OUT/peer.txt") peak_rss_mb=$peer_mb"

for run in "False NCHW" "False NHWC" "True NCHW" "True NHWC"; do
  read -r fp16 layout <<< "$run"
  /usr/bin/time -f "%M" -o "$OUT/ours.rss" "$BIN/train_image_classifier" \
    --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
    --batch_size=32 --optimizer=momentum --learning_rate=0.01 --weight_decay=0.00004 \
    --stop_at_step=$((STEPS + 2)) --log_loss_every_n_iters=1 --use_fp16=$fp16 --data_format=$layout \
    --intra_op_parallelism_threads=2 --num_preprocessing_threads=1 \
    --prefetch_buffer_size=2 --num_parallel_batches=1 > "$OUT/ours.txt" 2>&1
  # Seconds of the timed steps (global_step 3 .. STEPS+2), from the log lines.
  secs=$(awk -F'[[ ]' '/global_step = / { match($0, /global_step = [0-9]+/);
      n = substr($0, RSTART + 14, RLENGTH - 14) + 0; if (n > 2) s += $2 } END { print s }' \
    "$OUT/ours.txt")
  ips=$(awk -v s="$secs" -v n="$STEPS" 'BEGIN { printf "%.2f", 32 * n / s }')
  mb=$(( $(cat "$OUT/ours.rss") / 1024 ))
  ratio=$(awk -v a="$ips" -v b="$peer_ips" 'BEGIN { printf "%.2f", a / b }')
  echo "ours use_fp16=$fp16 data_format=$layout: images_per_sec=$ips peak_rss_mb=$mb" \
       "ratio_vs_peer_fp32=$ratio memory_ratio=$(awk -v a=$mb -v b=$peer_mb 'BEGIN{printf "%.2f", a/b}')"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
