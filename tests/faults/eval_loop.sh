#!/usr/bin/env bash
# The evaluation loop (eval_image_classifier --eval_interval_secs) at the
# ends of a training run it cannot foresee:
#  (a) a run that diverged (exit 4) after two checkpoints: the loop
#      evaluates the newest and ends, exit 0, saying the run ended with exit
#      status 4 (not waiting for a final checkpoint that never comes);
#  (b) a run that diverged before its first checkpoint: exit 3, "no
#      checkpoint";
#  (c) a train_dir the evaluator may not write to (another user's, read
#      only): the result is printed, a warning names eval_test, exit 0 (not
#      exit 1 after the result);
#  (d) a folder without a checkpoint yet: the loop says at once what it
#      waits for (not silent until eval_timeout_secs);
#  (e) a resumed run going on behind the finished run's metrics.json (no
#      checkpoint for a while): the loop waits for it (does not end at once),
#      and after a SIGTERM to the trainer evaluates the stop's checkpoint
#      and ends, exit 0, naming exit status 143.
# Every run is bounded by `timeout`: a hang fails with its own message.
# usage: eval_loop.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: eval_loop.sh BIN_DIR}
source "$(dirname "$0")/common.sh"

eval_pid=
cleanup() {
  kill_trainer
  [ -z "$eval_pid" ] || kill -KILL "$eval_pid" 2>/dev/null
  rm -rf "$work"
}
start_test train_image_classifier eval_image_classifier convert_dataset
make_dataset
write_train_cfg sgd save_checkpoints_steps=10 save_summaries_secs=0 hooks=StopAtStepHook,CheckpointSaverHook

# eval_loop NAME [FLAGS...]: the loop on $dir, at most 60 s (log NAME.log),
# run by the command prefix in the array `as` (empty: this user); sets rc.
as=()
eval_loop() {
  local name=$1
  shift
  timeout -k 10 60 "${as[@]}" "$bin/eval_image_classifier" --config "$work/train.cfg" \
    --checkpoint_path="$dir" --eval_interval_secs=1 "$@" >"$work/$name.log" 2>&1
  rc=$?
  [ $rc != 124 ] || fail "$name: the evaluation loop still ran after 60 s"
}

# diverge NAME STEP: a run in $work/NAME (now $dir) whose gradients are
# Inf at STEP: exit 4.
diverge() {
  dir=$work/$1
  FASTNN_FAILPOINTS="inf_grad_steps=$2" "$bin/train_image_classifier" --config "$work/train.cfg" \
    --train_dir="$dir" --stop_at_step=40 >"$work/$1_train.log" 2>&1
  [ $? = 4 ] || fail "$1: the diverging trainer did not exit 4"
}

# (a) diverged at step 26: checkpoints 10 and 20, metrics.json exit_status 4.
diverge diverged 26
eval_loop diverged_eval
[ $rc = 0 ] || fail "(a) the loop after a diverged run exited $rc, not 0"
grep -q '^eval_result .*"global_step":20' "$work/diverged_eval.log" ||
  fail "(a) model.ckpt-20 was not evaluated"
grep -q 'training run ended.*exit status 4' "$work/diverged_eval.log" ||
  fail "(a) no line saying the run ended with exit status 4"
echo "ok (a) diverged run: the loop evaluated step 20 and ended"

# (b) diverged at step 3, before any checkpoint.
diverge diverged_early 3
eval_loop early_eval
[ $rc = 3 ] || fail "(b) the loop after a run without checkpoints exited $rc, not 3"
grep -q 'no checkpoint' "$work/early_eval.log" || fail "(b) no 'no checkpoint' message"
echo "ok (b) diverged before a checkpoint: exit 3"

# (c) a finished run, its train_dir read-only for the evaluator: as another
# user when root (root may write anywhere), else by mode.
dir=$work/finished
"$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  --stop_at_step=20 >"$work/finished_train.log" 2>&1 || fail "(c) training exited $?"
chmod -R a+rX,a-w "$dir"
chmod a+rx "$work"
[ "$(id -u)" != 0 ] ||
  as=(setpriv --reuid=$((200000 + RANDOM)) --regid=$((200000 + RANDOM)) --clear-groups)
eval_loop readonly_eval
as=()
chmod -R u+w "$dir"
[ $rc = 0 ] || fail "(c) the loop on a read-only train_dir exited $rc, not 0"
grep -q '^eval_result .*"global_step":20' "$work/readonly_eval.log" ||
  fail "(c) no result for step 20"
grep -q 'warning: .*eval_test' "$work/readonly_eval.log" ||
  fail "(c) no warning naming eval_test"
[ ! -e "$dir/eval_test" ] || fail "(c) eval_test was created"
echo "ok (c) read-only train_dir: evaluated, warned, exit 0"

# (d) nothing to evaluate yet: the first wait is announced at once.
dir=$work/not_yet
eval_loop waiting --eval_timeout_secs=2
grep -q "waiting for a checkpoint (model.ckpt-\*) in .*not_yet" "$work/waiting.log" ||
  fail "(d) the loop did not say what it waits for"
echo "ok (d) waiting announced"

# (e) $work/finished ended at step 20; its resumption writes no checkpoint
# until it is stopped.
dir=$work/finished
"$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  --stop_at_step=100000000 --save_checkpoints_steps=0 --save_interval_secs=0 \
  >"$work/resumed_train.log" 2>&1 &
trainer_pid=$!
nap_open
deadline=$((SECONDS + 60))
until grep -q 'Restored' "$work/resumed_train.log"; do
  ((SECONDS < deadline)) || fail "(e) the resumed trainer did not restore in 60 s"
  nap 0.05
done
"$bin/eval_image_classifier" --config "$work/train.cfg" --checkpoint_path="$dir" \
  --eval_interval_secs=1 >"$work/resumed_eval.log" 2>&1 &
eval_pid=$!
until grep -q '^eval_result .*"global_step":20' "$work/resumed_eval.log"; do
  kill -0 $eval_pid 2>/dev/null || fail "(e) the loop ended before evaluating step 20"
  ((SECONDS < deadline)) || fail "(e) step 20 not evaluated in 60 s"
  nap 0.05
done
nap 2
kill -0 $eval_pid 2>/dev/null ||
  fail "(e) the loop ended while the resumed run goes on: $(tail -n 1 "$work/resumed_eval.log")"
kill -TERM "$trainer_pid"
wait "$trainer_pid"
[ $? = 143 ] || fail "(e) the resumed trainer did not exit 143"
trainer_pid=
timeout 60 tail --pid=$eval_pid -f /dev/null || fail "(e) the loop still ran 60 s after the run"
wait $eval_pid
rc=$?
eval_pid=
[ $rc = 0 ] || fail "(e) the loop exited $rc, not 0"
grep -q 'training run ended.*exit status 143' "$work/resumed_eval.log" ||
  fail "(e) no line saying the run ended with exit status 143"
[ "$(grep -c '^eval_result' "$work/resumed_eval.log")" = 2 ] ||
  fail "(e) the stop's checkpoint was not evaluated"
echo "ok (e) a resumed run: the loop waited, then evaluated its last checkpoint"
echo PASS
