#!/usr/bin/env bash
# Time to accuracy on Fashion-MNIST beside the Adam peer, same run.
#
# Peer:  ../shared/bench/peer_pytorch.py fmnist_tta TARGET MAX_EPOCHS 2 (TF-slim's
#        LeNet in PyTorch, Adam lr 1e-3, normalized tensors preloaded in memory,
#        batch 128, 2 threads): evaluates the test set after every epoch and
#        stops at the first epoch reaching TARGET.
# Ours:  train_image_classifier on CONFIG (configs/fashion_mnist_lenet.cfg: the
#        whole input pipeline from TFRecords) with stop_at_accuracy=TARGET,
#        evaluating the test set once an epoch as the peer does
#        (eval_every_n_iters = one epoch's steps at the config's batch size,
#        469 of 128). The config's own schedule and length stand (a recipe's
#        cosine is fitted to its num_epochs); MAX_EPOCHS bounds the peer, and
#        ours only when the config sets no length.
# Both figures are training seconds with the evaluations left out: the peer
# times its epoch loops (its loading is outside its clock), we take
# metrics.json's stop_at_accuracy.train_secs (from the first step to the step
# of the evaluation reaching TARGET; the pipeline's start is inside it).
# The machine's speed drifts (a shared VM): the two run interleaved, ROUNDS
# times, and the medians are compared.
#
# Usage: bench/time_to_accuracy.sh [TARGET=0.92] [MAX_EPOCHS=20]
#        ROUNDS=3 interleaved rounds; CONFIG=configs/fashion_mnist_lenet.cfg;
#        OURS_FLAGS="--key=value ..." adds flags to our runs.
# PEER_PYTHON=pypi runs the peer on the newest PyTorch from PyPI (bench/peer_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-0.92}
MAX_EPOCHS=${2:-20}
ROUNDS=${ROUNDS:-3}
CONFIG=${CONFIG:-configs/fashion_mnist_lenet.cfg}
# One epoch of the peer's loop is floor(60000 / 128) = 468 batches; our input
# runs on across epoch boundaries, 60000 / 128 = 468.75 batches an epoch.
BATCH=$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$CONFIG" | tail -1)
BATCH=${BATCH:-32}
EPOCH_STEPS=$(((60000 + BATCH - 1) / BATCH))
# The config's length (num_epochs or stop_at_step) stands; without one, MAX_EPOCHS.
LENGTH=()
grep -qE '^(num_epochs|stop_at_step) *=' "$CONFIG" || LENGTH=(--stop_at_step=$((MAX_EPOCHS * EPOCH_STEPS)))
# shellcheck source=bench/fmnist_common.sh
. bench/fmnist_common.sh

busy() { ps -eo pcpu=,comm= | awk '$1 > 15 { printf "%s(%s%%) ", $2, $1 }'; }
field() { sed -n "s/\(^\|.* \)$1=\([0-9.]*\).*/\2/p"; }

echo "start: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(load)"
echo "other busy processes: $(busy)"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|L2 cache|L3 cache):' |
  sed 's/  */ /g; s/^/lscpu: /'
echo "lscpu flags: $(grep -m1 -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "target: test accuracy >= $TARGET within $MAX_EPOCHS epochs; $ROUNDS interleaved rounds"

peer_secs="" ours_secs="" peer_hits=0 ours_hits=0
for ((round = 1; round <= ROUNDS; ++round)); do
  echo "round $round: load average $(load)"
  peer=$("$PEER_PYTHON" "$PEER" fmnist_tta "$TARGET" "$MAX_EPOCHS" 2 | tail -1)
  echo "  peer: $peer"
  peer_secs+="$(echo "$peer" | field train_seconds) "
  [ "$(echo "$peer" | field reached)" = 1 ] && peer_hits=$((peer_hits + 1))

  rm -rf "$OUT/run"
  # shellcheck disable=SC2086
  "$BIN/train_image_classifier" --config "$CONFIG" --dataset_dir="$DATA" \
    --train_dir="$OUT/run" --stop_at_accuracy="$TARGET" --eval_every_n_iters=$EPOCH_STEPS \
    "${LENGTH[@]}" --result_format=none \
    --log_loss_every_n_iters=0 ${OURS_FLAGS:-} > "$OUT/ours.log" 2>&1 ||
    { tail -20 "$OUT/ours.log"; exit 1; }
  # Reached: the training seconds to that evaluation; else those of the
  # whole run (the evaluations left out as well).
  ours=$(/usr/bin/python3 - "$OUT/run/metrics.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
s = m.get("stop_at_accuracy") or {}
# Images a training second, as the peer counts them (evaluations left out).
per_step = m["images_per_sec"] * m["wall_secs"] / max(1, m["steps_this_run"])
if s.get("reached"):
    print(f"reached=1 step={s['step']} test_acc={s['accuracy']:.4f} "
          f"train_seconds={s['train_secs']:.1f} "
          f"images_per_sec={per_step * s['step'] / s['train_secs']:.1f}")
else:
    print(f"reached=0 step={m['final_step']} test_acc={m.get('test_accuracy') or 0:.4f} "
          f"train_seconds={m['train_secs']:.1f} "
          f"images_per_sec={per_step * m['steps_this_run'] / m['train_secs']:.1f}")
EOF
)
  echo "  ours: $ours (epochs $(echo "$ours" | field step | awk -v e=$EPOCH_STEPS '{ printf "%.1f", $1 / e }'))"
  ours_secs+="$(echo "$ours" | field train_seconds) "
  [ "$(echo "$ours" | field reached)" = 1 ] && ours_hits=$((ours_hits + 1))
done

p=$(echo "$peer_secs" | median)
o=$(echo "$ours_secs" | median)
echo "peer: median training_secs=$p (rounds: $peer_secs; reached $TARGET in $peer_hits/$ROUNDS)"
echo "ours: median training_secs=$o (rounds: $ours_secs; reached $TARGET in $ours_hits/$ROUNDS)"
ratio=$(awk -v a="$o" -v b="$p" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
echo "ratio: fastnn-cpp / pytorch training seconds to $TARGET = $ratio (goal: <= 0.5)"
echo "end: $(date -u '+%H:%M UTC'), load average $(load)"
echo "other busy processes: $(busy)"
