#!/usr/bin/env bash
# An interrupted sweep leaves its running trials without a result,
# so the same command run again resumes them from their own checkpoints (as
# after SIGKILL), and a second sweep cannot share the first one's --out.
#  (a) SIGTERM to the sweep alone, while two trials train;
#  (b) a second sweep on the same --out (exit 2 naming the lock), then
#      SIGINT to the first sweep's whole process group (Ctrl-C in a
#      terminal), and a result.json of exit 6 left by an older sweep.
# Asserts: the sweep exits 143 / 130; each trial stopped once ("Stopped at
# global_step N: received SIG...", then "Saved ...model.ckpt-N": not exit 6,
# which a second signal gives) and has no result.json; the rerun exits 0
# with both trials to run, each restoring its checkpoint (global_step > 0)
# and finishing its whole budget with exit 0.
# usage: interrupt.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: interrupt.sh BIN_DIR}
source "$(dirname "$0")/../faults/common.sh"
start_test sweep train_image_classifier
nap_open
set -m  # background jobs in process groups of their own, as in a terminal

steps=150
printf 'learning_rate\n0.01\n0.02\n' >"$work/trials.csv"
# sweep_cmd NAME: the sweep's command line, in cmd.
sweep_cmd() {
  cmd=("$bin/sweep" --trials "$work/trials.csv" --parallel 2 --cores 2 --metric train_accuracy \
    --out "$work/$1" -- --model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8 \
    --num_sample_per_epoch=100000 --use_fp16=False --optimizer=sgd --log_loss_every_n_iters=5 \
    --result_format=none --stop_at_step=$steps)
}
# start NAME: the sweep in the background; returns once both trials train.
start() {
  name=$1
  sweep_cmd "$1"
  "${cmd[@]}" >"$work/$1.log" 2>&1 &
  trainer_pid=$!
  local deadline=$((SECONDS + 120)) t
  for t in 000 001; do
    until grep -qs 'global_step = ' "$work/$1/trial-$t/log.txt"; do
      kill -0 "$trainer_pid" 2>/dev/null || fail "$name: the sweep ended before trial-$t trained"
      [ $SECONDS -lt $deadline ] || fail "$name: trial-$t did not train within 120 s"
      nap 0.05
    done
  done
}
# finish SIGNAL_NAME CODE: waits for the sweep, expects CODE and both trials
# stopped once by SIGNAL_NAME with their checkpoint saved, without a result.
finish() {
  local rc t log stop
  wait_trainer 120 "$name: the sweep still runs 120 s after the signal"
  [ "$rc" = "$2" ] || fail "$name: the sweep exited $rc (expected $2)"
  for t in 000 001; do
    log=$work/$name/trial-$t/log.txt
    [ ! -e "$work/$name/trial-$t/result.json" ] ||
      fail "$name: trial-$t has a result after the interruption: $(tr -d '\n' <"$work/$name/trial-$t/result.json")"
    [ "$(grep -c '^Stopped at global_step' "$log")" = 1 ] ||
      fail "$name: trial-$t did not stop exactly once: $(grep -c '^Stopped at global_step' "$log") 'Stopped' lines"
    stop=$(sed -n "s/^Stopped at global_step \([0-9]*\): received $1.*/\1/p" "$log")
    [ -n "$stop" ] || fail "$name: trial-$t: no 'Stopped at global_step N: received $1'"
    grep -q "^Saved .*model\.ckpt-$stop\$" "$log" ||
      fail "$name: trial-$t stopped at step $stop without saving it (a second signal?)"
  done
}
# rerun: the same command again finishes both trials from their checkpoints.
rerun() {
  local rc t log restored
  sweep_cmd "$name"
  "${cmd[@]}" >"$work/$name.again.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || fail "$name: the rerun exited $rc"
  grep -q '2 trials, 0 done earlier, 2 to run' "$work/$name.again.log" ||
    fail "$name: the rerun did not run both trials: $(grep -m1 'to run' "$work/$name.again.log")"
  for t in 000 001; do
    log=$work/$name/trial-$t/log.txt
    restored=$(sed -n 's/^Restored .* (global_step \([0-9]*\))$/\1/p' "$log" | tail -n 1)
    [ -n "$restored" ] && [ "$restored" -gt 0 ] ||
      fail "$name: trial-$t did not resume from its checkpoint"
    grep -q '"exit_code": 0' "$work/$name/trial-$t/result.json" &&
      grep -q "\"final_step\": $steps" "$work/$name/trial-$t/result.json" ||
      fail "$name: trial-$t: $(tr -d '\n' <"$work/$name/trial-$t/result.json")"
  done
  echo "ok: $name: resumed from step $restored (trial-001) to $steps"
}

# (a) SIGTERM to the sweep.
start a
kill -TERM "$trainer_pid"
finish SIGTERM 143
rerun

# (b) A second sweep on the same --out, then SIGINT to the whole process
# group of the first, as Ctrl-C does.
start b
sweep_cmd b
"${cmd[@]}" >"$work/b.second.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "(b) a second sweep on the same --out exited $rc (expected 2)"
grep -q "is in use by another sweep" "$work/b.second.log" ||
  fail "(b) the second sweep did not name the lock: $(tail -n 1 "$work/b.second.log")"
kill -INT -- "-$trainer_pid"
finish SIGINT 130
# What an older sweep wrote for a trial stopped at once: not a result.
printf '{"status": "failed", "exit_code": 6, "metric": "train_accuracy"}\n' \
  >"$work/b/trial-001/result.json"
rerun
echo "ok: interrupt"
