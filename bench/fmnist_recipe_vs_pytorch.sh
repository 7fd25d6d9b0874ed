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
# less training time than the peer. ROUNDS interleaved rounds (the peer,
# then ours); the medians are compared, every round's figures printed.
# Usage: bench/fmnist_recipe_vs_pytorch.sh [PEER_EPOCHS=12] [CONFIG]
#        ROUNDS=3 interleaved rounds (each trains both runs in full).
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-12}
CONFIG=${2:-configs/fashion_mnist_lenet.cfg}
ROUNDS=${ROUNDS:-3}
# shellcheck source=bench/fmnist_common.sh
. bench/fmnist_common.sh

json() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$OUT/run/metrics.json" | head -1; }

echo "start: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(load)"
echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), family $(lscpu | sed -n 's/^CPU family: *//p')," \
  "model $(lscpu | sed -n 's/^Model: *//p'); flags: $(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo |
  sort -u | tr '\n' ' ')$(nproc) cores; peer: torch $("$PEER_PYTHON" -c 'import torch; print(torch.__version__)')"
p_secs="" p_ips="" p_accs="" o_secs="" o_ips="" o_accs=""
for ((round = 1; round <= ROUNDS; ++round)); do
  echo "round $round: load average $(load)"
  peer=$("$PEER_PYTHON" "$PEER" fmnist "$EPOCHS" 2 | tail -1)
  ips=$(echo "$peer" | sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p')
  acc=$(echo "$peer" | sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p')
  # The peer's loop sees EPOCHS x floor(60000 / 128) batches of 128.
  secs=$(awk -v e="$EPOCHS" -v ips="$ips" 'BEGIN { printf "%.1f", e * 468 * 128 / ips }')
  echo "  peer: training_secs=$secs images_per_sec=$ips epochs=$EPOCHS test_acc=$acc"
  p_secs+="$secs " p_ips+="$ips " p_accs+="$acc "

  rm -rf "$OUT/run"
  "$BIN/train_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" \
    --train_dir="$OUT/run" --result_format=none > "$OUT/ours.log" 2>&1 ||
    { tail -20 "$OUT/ours.log"; exit 1; }
  grep '^Stopped' "$OUT/ours.log" | sed 's/^/  /' || true
  secs=$(json wall_secs | awk '{ printf "%.1f", $1 }')
  ips=$(json images_per_sec | awk '{ printf "%.1f", $1 }')
  acc=$("$BIN/eval_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" \
    --checkpoint_path="$OUT/run" | sed -n 's/^Accuracy = \([0-9.]*\).*/\1/p')
  echo "  ours: training_secs=$secs images_per_sec=$ips steps=$(json final_step) test_acc=$acc ($CONFIG)"
  o_secs+="$secs " o_ips+="$ips " o_accs+="$acc "
done

ps=$(echo "$p_secs" | median) os=$(echo "$o_secs" | median)
pa=$(echo "$p_accs" | median) oa=$(echo "$o_accs" | median)
echo "peer: median training_secs=$ps images_per_sec=$(echo "$p_ips" | median) test_acc=$pa (rounds: $p_secs)"
echo "ours: median training_secs=$os images_per_sec=$(echo "$o_ips" | median) test_acc=$oa (rounds: $o_secs)"
ratio=$(awk -v a="$os" -v b="$ps" 'BEGIN { printf "%.2f", a / b }')
echo "ratio: fastnn-cpp / pytorch training time = $ratio (medians); test accuracy $oa vs $pa"
verdict=$(awk -v a="$oa" -v t="$ratio" 'BEGIN { print (a >= 0.92 && t < 1) ? "met" : "not met" }')
echo "goal (>= 0.92 test accuracy in less training time than the peer): $verdict"
echo "end: $(date -u '+%H:%M UTC'), load average $(load)"
