#!/usr/bin/env bash
# Two real train_image_classifier workers (torchrun's variables,
# LeNet on mock data) started with settings that differ.
#   learning_rate 0.01 / 0.1, sgd / adam, num_classes 10 / 5: both workers
#   exit 2 at rendezvous with one line naming the key and both values (not
#   training apart to exit 0, diverging with exit 4, or aborting with 134).
#   Per-rank keys (train_dir, device threads, dataset_dir) may differ: both
#   train to the end, exit 0.
# Every run is bounded by `timeout`; no process outlives the test.
# usage: mismatched_workers.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: mismatched_workers.sh BIN_DIR}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- ${f##*/}"; tail -n 5 "$f"; done
  exit 1
}
port=$((31000 + $$ % 2000))

# pair NAME "RANK0 FLAGS" "RANK1 FLAGS": runs both workers; sets rc0, rc1.
pair() {
  local name=$1 r flags
  port=$((port + 1))
  pids=()
  for r in 0 1; do
    if [ $r = 0 ]; then flags=$2; else flags=$3; fi
    # shellcheck disable=SC2086
    env WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      FASTNN_JOB_TOKEN=mismatch timeout -k 5 120 "$bin/train_image_classifier" \
      --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=4 \
      --num_sample_per_epoch=1000 --stop_at_step=3 --use_fp16=False \
      --num_preprocessing_threads=1 --intra_op_parallelism_threads=1 \
      --worker_timeout_secs=30 $flags >"$work/$name.$r.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"; rc0=$?
  wait "${pids[1]}"; rc1=$?
  pids=()
}

# differ NAME KEY "RANK0 FLAG" "RANK1 FLAG" TEXT: both exit 2 naming TEXT.
differ() {
  pair "$1" "$3" "$4"
  [ "$rc0" = 2 ] && [ "$rc1" = 2 ] || fail "$1: exit codes $rc0 and $rc1, expected 2 and 2"
  for r in 0 1; do
    grep -q "settings differ.*$5" "$work/$1.$r.log" ||
      fail "$1: rank $r's log does not name $2 ($5)"
  done
  echo "ok: $1: both exit 2: $(grep -o "differs from rank 0: .*" "$work/$1.1.log")"
}

differ lr learning_rate "--learning_rate=0.01" "--learning_rate=0.1" \
  "learning_rate='0.1' (rank 0: '0.01')"
differ optimizer optimizer "--optimizer=sgd" "--optimizer=adam" \
  "optimizer='adam' (rank 0: 'sgd')"
differ classes num_classes "--num_classes=10" "--num_classes=5" \
  "num_classes='5' (rank 0: '10')"

pair per_rank "--train_dir=$work/a --inter_op_parallelism_threads=1" \
  "--train_dir=$work/b --inter_op_parallelism_threads=2 --dataset_dir=$work/elsewhere"
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || fail "per_rank: exit codes $rc0 and $rc1, expected 0 and 0"
[ -f "$work/a/model.ckpt-3" ] || fail "per_rank: rank 0 wrote no model.ckpt-3"
echo "ok: per-rank keys may differ: both exit 0"
