#!/usr/bin/env bash
# Data-parallel scaling on this machine: 1 process x 1 thread vs 2 processes
# x 1 thread, batch 32 per process at 64x64 on synthetic data, beside
# PyTorch DDP over Gloo (../shared/bench/peer_ddp.py) in the same run.
# Scaling efficiency = 2-process throughput / (2 x 1-process throughput).
#
# Models: the peer's reference figure uses torchvision resnet18; this
# project's smallest ResNet is resnet_v1_50, so the peer is also run with
# torchvision resnet50 (ResNet v1.5: the same layers, stride on the 3x3)
# for a like-for-like comparison. Gradients: 23.5 M fp32 values (94 MB).
# Also reports the all-reduce bus bandwidth of our Gloo communicator
# (nccl-tests: busbw = algbw x 2(n-1)/n) for the gradient size.
#
# Usage: bench/ddp_scaling.sh [STEPS=10] [PEER_MODELS="resnet50 resnet18"] ("" skips the peer)
#        ROUNDS=3 interleaved repetitions; medians are reported.
#        OURS_FLAGS="--tensor_fusion_max_bytes=..." adds flags to our runs.
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/peer_python.sh
. bench/peer_python.sh
STEPS=${1:-10}
PEER_MODELS=${2-"resnet50 resnet18"}
BIN=${BUILD_DIR:-build}/bin
[ -x "$BIN/allreduce_bench" ] || {
  echo "bench: $BIN/allreduce_bench missing: FASTNN_BUILD_BENCH=1 scripts/setup.sh" >&2; exit 2; }
PEER=${PEER:-../shared/bench/peer_ddp.py}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "other busy processes: $(ps -eo pcpu=,comm= | awk '$1 > 15 { printf "%s(%s%%) ", $2, $1 }')"

# The machine's speed drifts from minute to minute (a shared VM):
# every figure is taken ROUNDS times, interleaved, and reported as the
# median, with the spread of the per-round efficiencies beside it.
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  if (NR == 0) { print 0; exit } if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }
eff() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1f", 100 * b / (2 * a); else print 0 }'; }
peer() {
  "$PEER_PYTHON" "$PEER" "$1" "$2" 32 "$STEPS" | sed -n 's/.*images_per_sec=\([0-9.]*\).*/\1/p'
}

# Ours: W workers joined through the coordinator (torchrun's variables);
# "ours W solo" starts W independent single-process runs at once instead.
ours() {
  local world=$1 mode=${2:-} port=$((29600 + RANDOM % 300)) pids=()
  for ((rank = 0; rank < world; ++rank)); do
    local w=$world r=$rank
    if [ "$mode" = solo ]; then w=1; r=0; port=$((port + 1)); fi
    env WORLD_SIZE="$w" RANK="$r" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
      FASTNN_JOB_TOKEN=bench "$BIN/train_image_classifier" \
      --dataset_name=mock --model_name=resnet_v1_50 --num_classes=10 --train_image_size=64 \
      --batch_size=32 --optimizer=momentum --learning_rate=0.01 --use_fp16=False \
      --stop_at_step=$((STEPS + 3)) --log_loss_every_n_iters=1 \
      --intra_op_parallelism_threads=1 --num_preprocessing_threads=1 \
      --prefetch_buffer_size=2 --num_parallel_batches=1 ${OURS_FLAGS:-} \
      > "$OUT/ours$world.$rank.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  # Timed steps: global_step 4 .. STEPS+3 from each log's per-step lines;
  # a joined run counts rank 0's (its lines carry every worker's images).
  local total=0 last
  [ "$mode" = solo ] && last=$((world - 1)) || last=0
  for ((rank = 0; rank <= last; ++rank)); do
    local secs
    # A worker's lines start with "[rank R] " in a joined run: read the
    # seconds from "<secs> secs/step", wherever the line puts it.
    secs=$(awk '/global_step = / {
        match($0, /global_step = [0-9]+/); n = substr($0, RSTART + 14, RLENGTH - 14) + 0
        match($0, /[0-9.]+ secs\/step/); t = substr($0, RSTART, RLENGTH - 10) + 0
        if (n > 3) s += t } END { print s + 0 }' "$OUT/ours$world.$rank.txt")
    if ! awk -v s="$secs" 'BEGIN { exit !(s > 0) }'; then
      echo "bench: no timed steps in our $world-process run (rank $rank):" >&2
      tail -5 "$OUT/ours$world.$rank.txt" >&2
      exit 1
    fi
    local per=$([ "$mode" = solo ] && echo 1 || echo "$world")
    total=$(awk -v t="$total" -v s="$secs" -v n="$STEPS" -v w="$per" \
      'BEGIN { printf "%.2f", t + 32 * w * n / s }')
  done
  echo "$total"
}
ROUNDS=${ROUNDS:-3}
declare -A p1 p2 pe
o1s="" o2s="" os2s="" oes=""
for ((round = 1; round <= ROUNDS; ++round)); do
  for model in $PEER_MODELS; do
    a=$(peer 1 "$model"); b=$(peer 2 "$model")
    p1[$model]+="$a "; p2[$model]+="$b "; pe[$model]+="$(eff "$a" "$b") "
  done
  a=$(ours 1); b=$(ours 2); c=$(ours 2 solo)
  o1s+="$a "; o2s+="$b "; os2s+="$c "; oes+="$(eff "$a" "$b") "
  echo "round $round: ours $a -> $b img/s ($(eff "$a" "$b")%), independent $c;" \
    "$(for model in $PEER_MODELS; do printf 'peer %s %s -> %s; ' "$model" \
      "$(echo "${p1[$model]}" | awk '{ print $NF }')" "$(echo "${p2[$model]}" | awk '{ print $NF }')"; done)"
done
echo "medians over $ROUNDS rounds of $STEPS timed steps:"
for model in $PEER_MODELS; do
  a=$(echo "${p1[$model]}" | median); b=$(echo "${p2[$model]}" | median)
  eval "peer_${model}_1=$a; peer_${model}_2=$b"
  echo "peer DDP $model: 1 process $a img/s, 2 processes $b img/s, efficiency $(eff "$a" "$b")%" \
    "(rounds: $(echo "${pe[$model]}" | spread)%)"
done
o1=$(echo "$o1s" | median); o2=$(echo "$o2s" | median); os2=$(echo "$os2s" | median)
echo "ours resnet_v1_50: 1 process $o1 img/s, 2 processes $o2 img/s, efficiency $(eff "$o1" "$o2")%" \
  "(rounds: $(echo "$oes" | spread)%)"
# Two independent runs at once: what two processes get from this machine
# as loaded now, without any synchronization; joined / independent
# isolates the data plane's cost from other load on the cores.
echo "ours resnet_v1_50: 2 independent processes $os2 img/s ($(eff "$o1" "$os2")% of 2 x 1 process);" \
  "joined / independent $(awk -v a="$o2" -v b="$os2" 'BEGIN { printf "%.1f", 100 * a / b }')%"
echo "ours/peer(resnet50) images/sec: 1 process $(awk -v a="$o1" -v b="${peer_resnet50_1:-0}" \
  'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'), 2 processes $(awk -v a="$o2" \
  -v b="${peer_resnet50_2:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')"

port=$((29900 + RANDOM % 90))
for bytes in 1048576 94000000; do
  "$BIN/allreduce_bench" 1 2 "$port" "$bytes" 10 > /dev/null &
  "$BIN/allreduce_bench" 0 2 "$port" "$bytes" 10
  wait
  port=$((port + 1))
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "other busy processes: $(ps -eo pcpu=,comm= | awk '$1 > 15 { printf "%s(%s%%) ", $2, $1 }')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
