#!/usr/bin/env bash
# The training step against the machine's limit. The limit
# is LibTorch's own fp32 sgemm (this build's BLAS) on 1 and 2 threads, best
# of 5 s of N x N products, and for the bf16 runs (use_fp16=True: bfloat16
# autocast where the CPU has AVX512_BF16) the same product in bfloat16; a network's work is its traced convolutions
# and matrix products (model_flops: 2 FLOP per multiply-add, training = 3x
# the forward pass). Achieved GFLOP/s = training images/s x GFLOP per image.
#   lenet:        configs/fashion_mnist_lenet.cfg (TFRecords, the whole
#                 pipeline, 2 intra-op threads), STEPS steps, metrics.json's
#                 images/s;
#   resnet_v1_50: synthetic data, batch 32, 2 threads, momentum, fp32, the
#                 given data_format, 2 warm-up steps then RESNET_STEPS timed
#                 (as bench/resnet50_vs_pytorch.sh times them).
# Each network runs in fp32 and with use_fp16=True; the latter is set
# against the bf16 limit (on a CPU without bfloat16 instructions it runs in
# fp32 and the bench says so).
# Usage: bench/gflops.sh [STEPS=400] [RESNET_STEPS=5]  (DATA_FORMAT=NHWC)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-400}
RESNET_STEPS=${2:-5}
LAYOUT=${DATA_FORMAT:-NHWC}
FMNIST_PEER=0 source bench/fmnist_common.sh
[ -x "$BIN/model_flops" ] || { echo "bench: $BIN/model_flops missing: FASTNN_BUILD_BENCH=1 scripts/setup.sh model_flops" >&2; exit 2; }
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1);" \
  "$(grep -m1 -o -w -E 'avx512_bf16|avx512f|avx2|fma' /proc/cpuinfo | sort -u | tr '\n' ' ')" \
  "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | head -1; }
peak() {  # DTYPE THREADS -> best GFLOP/s over N = 2048 and 4096
  local best=0 n g
  for n in 2048 4096; do
    g=$("$BIN/model_flops" gemm "$1" "$n" "$2" 5 | tee -a "$OUT/gemm.txt" | field best_gflops)
    best=$(awk -v a="$best" -v b="$g" 'BEGIN { print (b > a) ? b : a }')
  done
  echo "$best"
}
P1=$(peak fp32 1)
P2=$(peak fp32 2)
B2=$(peak bf16 2)
cat "$OUT/gemm.txt"
bf16_cpu=$(grep -q -w avx512_bf16 /proc/cpuinfo && echo 1 || echo 0)

"$BIN/model_flops" net lenet 28 1 10 | tee "$OUT/lenet.flops"
"$BIN/model_flops" net resnet_v1_50 224 3 1000 | tee "$OUT/resnet.flops"
LF=$(field train_gflop_per_image < "$OUT/lenet.flops")
RF=$(field train_gflop_per_image < "$OUT/resnet.flops")

lenet() {  # USE_FP16 -> images/s
  rm -rf "$OUT/lenet"
  "$BIN/train_image_classifier" --config configs/fashion_mnist_lenet.cfg --dataset_dir="$DATA" \
    --train_dir="$OUT/lenet" --stop_at_step="$STEPS" --save_checkpoints_steps=0 \
    --eval_every_n_iters=0 --stop_at_accuracy=None --use_fp16="$1" \
    --log_loss_every_n_iters=0 --result_format=none >"$OUT/lenet.log" 2>&1
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["images_per_sec"])' \
    "$OUT/lenet/metrics.json"
}
resnet() {  # USE_FP16 -> images/s
  rm -rf "$OUT/resnet"
  "$BIN/train_image_classifier" --dataset_name=mock --model_name=resnet_v1_50 --num_classes=1000 \
    --batch_size=32 --optimizer=momentum --learning_rate=0.01 --weight_decay=0.00004 \
    --stop_at_step=$((RESNET_STEPS + 2)) --log_loss_every_n_iters=1 --use_fp16="$1" \
    --data_format="$LAYOUT" --intra_op_parallelism_threads=2 --num_preprocessing_threads=1 \
    --prefetch_buffer_size=2 --num_parallel_batches=1 --train_dir="$OUT/resnet" >"$OUT/resnet.log" 2>&1
  local secs
  secs=$(awk -F'[[ ]' '/global_step = / { match($0, /global_step = [0-9]+/);
      n = substr($0, RSTART + 14, RLENGTH - 14) + 0; if (n > 2) s += $2 } END { print s }' \
    "$OUT/resnet.log")
  awk -v s="$secs" -v n="$RESNET_STEPS" 'BEGIN { printf "%.2f", 32 * n / s }'
}
LI=$(lenet False)
LB=$(lenet True)
RI=$(resnet False)
RB=$(resnet True)

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gemm peak: fp32 1 thread $P1 GFLOP/s, fp32 2 threads $P2 GFLOP/s, bf16 2 threads $B2 GFLOP/s"
[ "$bf16_cpu" = 1 ] || echo "note: no AVX512_BF16 on this CPU: the use_fp16=True runs are fp32"
row() {  # NAME IMAGES/S GFLOP PEAK WHAT
  awk -v n="$1" -v i="$2" -v f="$3" -v p="$4" -v w="$5" 'BEGIN {
    printf "%s: %.2f images/s x %.4f GFLOP = %.1f GFLOP/s = %.3f of the %s\n", n, i, f, i * f, i * f / p, w }'
}
row "lenet (2 threads, the whole pipeline, fp32)" "$LI" "$LF" "$P2" "2-thread fp32 sgemm peak"
row "lenet (2 threads, the whole pipeline, use_fp16=True)" "$LB" "$LF" "$B2" "2-thread bf16 gemm peak"
row "resnet_v1_50 (2 threads, $LAYOUT, synthetic, fp32)" "$RI" "$RF" "$P2" "2-thread fp32 sgemm peak"
row "resnet_v1_50 (2 threads, $LAYOUT, synthetic, use_fp16=True)" "$RB" "$RF" "$B2" "2-thread bf16 gemm peak"
awk -v a="$LB" -v b="$LI" -v c="$RB" -v d="$RI" 'BEGIN {
  printf "use_fp16=True / fp32 images/s: lenet %.2fx, resnet_v1_50 %.2fx\n", a / b, c / d }'
