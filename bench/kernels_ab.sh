#!/usr/bin/env bash
# The project's CPU kernels (src/kernels/, the key fused_kernels) on every
# network whose blocks they serve, same binary A/B: training images/s with
# fused_kernels=True against fused_kernels=False (LibTorch's operators),
# ROUNDS interleaved rounds, medians. Mock images on the training device
# (synthetic_device_inputs): the step alone, no input pipeline.
# Not a peer race: the ratio says what the kernels add to our own step.
# Usage: bench/kernels_ab.sh [ROUNDS=3] [STEPS=20]   (NETS="lenet cifarnet overfeat vgg_a")
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
STEPS=${2:-20}
BIN=${BUILD_DIR:-build}/bin
[ -x "$BIN/train_image_classifier" ] || { echo "bench: $BIN/train_image_classifier missing: scripts/setup.sh" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
  "$(grep -m1 -o -w -E 'avx512f|avx512_bf16|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# net -> "grayscale size batch"
shape() {
  case $1 in
    lenet) echo "True 28 128" ;;
    cifarnet) echo "False 32 128" ;;
    overfeat) echo "False 231 8" ;;
    vgg_a | vgg_16) echo "False 224 4" ;;
    *) echo "bench: no shape for $1" >&2; exit 2 ;;
  esac
}

# run NET FUSED -> images/s over steps 3..STEPS+2
run() {
  local net=$1 fused=$2 c s b
  read -r c s b <<<"$(shape "$net")"
  local log="$OUT/$net.$fused.log"
  "$BIN/train_image_classifier" --dataset_name=mock --synthetic_device_inputs=True \
    --model_name="$net" --num_classes=10 --use_grayscale="$c" --train_image_size="$s" \
    --batch_size="$b" --optimizer=momentum --learning_rate=0.01 --use_fp16=False \
    --fused_kernels="$fused" --stop_at_step=$((STEPS + 2)) --log_loss_every_n_iters=1 \
    --intra_op_parallelism_threads="$(nproc)" >"$log" 2>&1 || {
    echo "bench: $net fused_kernels=$fused failed:" >&2; tail -3 "$log" >&2; exit 1; }
  awk -v b="$b" '/global_step = / { match($0, /global_step = [0-9]+/);
      n = substr($0, RSTART + 14, RLENGTH - 14) + 0
      match($0, /[0-9.]+ secs\/step/); t = substr($0, RSTART, RLENGTH - 10) + 0
      if (n > 2) { s += t; k++ } } END { if (s > 0) printf "%.1f", b * k / s; else print 0 }' "$log"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-10s %-22s %-22s %s\n' network "kernels images/s" "LibTorch ops images/s" ratio
for net in ${NETS:-lenet cifarnet overfeat vgg_a}; do
  on="" off=""
  for ((r = 0; r < ROUNDS; ++r)); do
    on+="$(run "$net" True) "
    off+="$(run "$net" False) "
  done
  mon=$(echo "$on" | median)
  moff=$(echo "$off" | median)
  printf '%-10s %-22s %-22s %s\n' "$net" "$mon ($on)" "$moff ($off)" \
    "$(awk -v a="$mon" -v b="$moff" 'BEGIN { printf "%.2f", a / b }')"
done
echo "$ROUNDS rounds of $STEPS timed steps each, interleaved; batch per network above (shape())."
