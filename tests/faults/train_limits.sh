#!/usr/bin/env bash
# The training tools under the limits a container sets, and a stop during
# an evaluation:
#  (a) few threads allowed (`ulimit -u`, root only: as a fresh user, since
#      root is exempt): convert_dataset, train_image_classifier and
#      eval_image_classifier exit 0 with fewer threads, or 2 with a message
#      naming the limit; never an abort (134) nor OpenBLAS's SIGINT (130),
#      no temporary file left; with 12 allowed training still finishes;
#  (b) `ulimit -f` below a checkpoint's size: exit 3 naming the checkpoint
#      (never SIGXFSZ, 153, without a word);
#  (c) hooks= without StopAtStepHook and stop_at_step set: a warning that
#      stop_at_step is not used;
#  (d) SIGTERM while the trainer evaluates (eval_every_n_iters, a split far
#      longer to evaluate than the stop takes): exit 143 without finishing
#      the evaluation.
# usage: train_limits.sh BIN_DIR [PARTS=abcd]
set -uo pipefail
bin=${1:?usage: train_limits.sh BIN_DIR [PARTS=abcd]}
parts=${2:-abcd}
source "$(dirname "$0")/common.sh"
start_test train_image_classifier eval_image_classifier convert_dataset

make_dataset
write_train_cfg sgd save_checkpoints_steps=10 save_summaries_secs=0 stop_at_step=20

# run NAME CMD...: CMD's output in NAME.log, at most 120 s; sets rc.
run() {
  local name=$1
  shift
  timeout -k 10 120 "$@" >"$work/$name.log" 2>&1
  rc=$?
  [ $rc != 124 ] || fail "$name: still running after 120 s"
}
# limited NAME N CMD...: run CMD as a user of its own allowed N processes
# and threads in all. Exit 0, or 2 naming the limit; nothing else (130 would
# be OpenBLAS's SIGINT when its core-sized pool cannot start at load).
limited() {
  local name=$1 n=$2
  shift 2
  run "$name" env -u OPENBLAS_NUM_THREADS setpriv --reuid=$((200000 + RANDOM)) \
    --regid=$((200000 + RANDOM)) --clear-groups bash -c 'ulimit -u "$0" && exec "$@"' "$n" "$@"
  case $rc in
    0) ;;
    2) grep -q 'ulimit -u' "$work/$name.log" || fail "$name: exit 2 without naming ulimit -u" ;;
    *) fail "$name: exit $rc under ulimit -u $n" ;;
  esac
}

# (a)
if [[ $parts != *a* ]]; then
  :
elif [ "$(id -u)" = 0 ]; then
  run trained "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$work/run"
  [ $rc = 0 ] || fail "(a) training without a limit exited $rc"
  chmod 755 "$work"
  chmod -R a+rX "$work/data" "$work/raw" "$work/run"
  for n in 2 5 12; do
    out=$work/converted_$n
    mkdir -m 777 "$out"
    limited "convert_$n" "$n" "$bin/convert_dataset" --dataset_name mnist --input "$work/raw" \
      --dataset_dir "$out" --num_threads 8 --quiet
    [ -z "$(ls -A "$out" | grep tmp)" ] || fail "convert_$n: left $(ls "$out")"
    mkdir -m 777 "$work/run_$n"
    limited "train_$n" "$n" "$bin/train_image_classifier" --config "$work/train.cfg" \
      --train_dir="$work/run_$n" --num_preprocessing_threads=8 --eval_every_n_iters=10
    limited "eval_$n" "$n" "$bin/eval_image_classifier" --config "$work/train.cfg" \
      --checkpoint_path="$work/run" --num_preprocessing_threads=8 \
      --intra_op_parallelism_threads=0
  done
  grep -q 'Stopped at global_step 20' "$work/train_12.log" ||
    fail "train_12: 12 threads do not train to the end"
  grep -q '^eval_result' "$work/eval_12.log" || fail "eval_12: no result"
  echo "ok (a) ulimit -u 2, 5, 12: exit 0 or 2 with a message; 12 trains"
else
  echo "skip (a): ulimit -u needs another user (not root)"
fi

# (b) 1 MiB of file: config.cfg is written, model.ckpt-10 (13 MB) is not.
[[ $parts == *b* ]] && {
run fsize bash -c 'ulimit -f 1024 && exec "$@"' - "$bin/train_image_classifier" \
  --config "$work/train.cfg" --train_dir="$work/fsize"
[ $rc = 3 ] || fail "(b) ulimit -f: exit $rc, not 3"
grep -q 'model.ckpt-10.*File too large' "$work/fsize.log" ||
  fail "(b) no message naming model.ckpt-10 and the file size limit"
echo "ok (b) ulimit -f: exit 3 naming the checkpoint"
}

# (c)
[[ $parts == *c* ]] && {
run hooks "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$work/hooks" \
  --hooks=LoggingTensorHook --stop_at_step=5 --num_epochs=1
[ $rc = 0 ] || fail "(c) exit $rc"
grep -q 'warning: .*stop_at_step.*StopAtStepHook' "$work/hooks.log" ||
  fail "(c) no warning that stop_at_step needs StopAtStepHook"
echo "ok (c) stop_at_step without StopAtStepHook: warned"
}

# (d) 10000 test images one at a time: tens of seconds to evaluate.
[[ $parts == *d* ]] && {
make_idx "$work/raw" t10k 10000
"$bin/convert_dataset" --dataset_name mnist --input "$work/raw" --dataset_dir "$work/big" \
  --num_threads 1 --quiet >"$work/convert_big.log" 2>&1 || fail "(d) convert_dataset exited $?"
log=$work/stop_eval.log
"$bin/train_image_classifier" --config "$work/train.cfg" --dataset_dir="$work/big" \
  --train_dir="$work/stop_eval" --stop_at_step=1000 --eval_every_n_iters=10 \
  --eval_batch_size=1 >"$log" 2>&1 &
trainer_pid=$!
nap_open
deadline=$((SECONDS + 120))
until grep -q 'global_step = 10' "$log"; do
  kill -0 "$trainer_pid" 2>/dev/null || fail "(d) the trainer ended before step 10"
  ((SECONDS < deadline)) || fail "(d) no step 10 after 120 s"
  nap 0.05
done
kill -TERM "$trainer_pid"
wait "$trainer_pid"
rc=$?
trainer_pid=
[ $rc = 143 ] || fail "(d) exit $rc after SIGTERM, not 143"
grep -q 'eval test at global_step 10: accuracy' "$log" &&
  fail "(d) the evaluation ran to its end before the stop"
grep -q 'eval test at global_step 10: stopped by a signal' "$log" ||
  fail "(d) no line saying the evaluation was stopped"
echo "ok (d) SIGTERM during an evaluation: 143 without finishing it"
}
echo PASS
