#!/usr/bin/env bash
# Issue 25 item 4: the training step against the machine's limit. The limit
# is LibTorch's own fp32 sgemm (this build's BLAS) on 1 and 2 threads, best
# of SECONDS of N x N products; a network's work is its traced convolutions
# and matrix products (model_flops: 2 FLOP per multiply-add, training = 3x
# the forward pass). Achieved GFLOP/s = training images/s x GFLOP per image.
#   lenet:        configs/fashion_mnist_lenet.cfg (TFRecords, the whole
#                 pipeline, 2 intra-op threads), STEPS steps, metrics.json's
#                 images/s;
#   resnet_v1_50: synthetic data, batch 32, 2 threads, momentum, fp32, the
#                 given data_format, 2 warm-up steps then RESNET_STEPS timed
#                 (as bench/resnet50_vs_pytorch.sh times them).
# Usage: bench/gflops.sh [STEPS=400] [RESNET_STEPS=5]  (DATA_FORMAT=NHWC)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-400}
RESNET_STEPS=${2:-5}
LAYOUT=${DATA_FORMAT:-NHWC}
FMNIST_PEER=0 source bench/fmnist_common.sh
[ -x "$BIN/model_flops" ] || { echo "bench: build model_flops first" >&2; exit 2; }
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1);" \
  "$(grep -m1 -o -w -E 'avx512_bf16|avx512f|avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')" \
  "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | head -1; }
peak() {  # THREADS -> best GFLOP/s over N = 2048 and 4096
  local best=0 n g
  for n in 2048 4096; do
    g=$("$BIN/model_flops" sgemm "$n" "$1" 5 | tee -a "$OUT/sgemm.txt" | field best_gflops)
    best=$(awk -v a="$best" -v b="$g" 'BEGIN { print (b > a) ? b : a }')
  done
  echo "$best"
}
P1=$(peak 1)
P2=$(peak 2)
cat "$OUT/sgemm.txt"

"$BIN/model_flops" net lenet 28 1 10 | tee "$OUT/lenet.flops"
"$BIN/model_flops" net resnet_v1_50 224 3 1000 | tee "$OUT/resnet.flops"
LF=$(field train_gflop_per_image < "$OUT/lenet.flops")
RF=$(field train_gflop_per_image < "$OUT/resnet.flops")

"$BIN/train_image_classifier" --config configs/fashion_mnist_lenet.cfg --dataset_dir="$DATA" \
  --train_dir="$OUT/lenet" --stop_at_step="$STEPS" --save_checkpoints_steps=0 \
  --log_loss_every_n_iters=0 --result_format=none >"$OUT/lenet.log" 2>&1
LI=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["images_per_sec"])' \
  "$OUT/lenet/metrics.json")

"$BIN/train_image_classifier" --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
  --batch_size=32 --optimizer=momentum --learning_rate=0.01 --weight_decay=0.00004 \
  --stop_at_step=$((RESNET_STEPS + 2)) --log_loss_every_n_iters=1 --use_fp16=False \
  --data_format="$LAYOUT" --intra_op_parallelism_threads=2 --num_preprocessing_threads=1 \
  --prefetch_buffer_size=2 --num_parallel_batches=1 --train_dir="$OUT/resnet" >"$OUT/resnet.log" 2>&1
secs=$(awk -F'[[ ]' '/global_step = / { match($0, /global_step = [0-9]+/);
    n = substr($0, RSTART + 14, RLENGTH - 14) + 0; if (n > 2) s += $2 } END { print s }' \
  "$OUT/resnet.log")
RI=$(awk -v s="$secs" -v n="$RESNET_STEPS" 'BEGIN { printf "%.2f", 32 * n / s }')

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sgemm fp32 peak: 1 thread $P1 GFLOP/s, 2 threads $P2 GFLOP/s"
awk -v i="$LI" -v f="$LF" -v p="$P2" 'BEGIN { printf "lenet (2 threads, the whole pipeline): %.1f images/s x %.4f GFLOP = %.1f GFLOP/s = %.3f of the 2-thread sgemm peak\n", i, f, i * f, i * f / p }'
awk -v i="$RI" -v f="$RF" -v p="$P2" -v l="$LAYOUT" 'BEGIN { printf "resnet_v1_50 (2 threads, fp32, %s, synthetic): %.2f images/s x %.2f GFLOP = %.1f GFLOP/s = %.3f of the 2-thread sgemm peak\n", l, i, f, i * f, i * f / p }'
