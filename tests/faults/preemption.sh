#!/usr/bin/env bash
# Fault: preemption signals to a running trainer (checkpoint every 10 steps).
#  (a) one SIGTERM;
#  (b) SIGTERM, then a second SIGTERM soon after: in odd rounds as soon as
#      a checkpoint's temporary file shows up (during the final checkpoint's
#      write, or the periodic one before it), in even rounds after a random
#      0-150 ms;
#  (c) SIGTERM, then SIGKILL: likewise when a temporary file shows up (odd
#      rounds) or after a random 0-300 ms (even rounds).
# Asserts: (a) exit 143, "received SIGTERM", "Saved" model.ckpt-<stop step>,
# which eval_image_classifier loads. (b) exit 6, or 143 when the checkpoint
# was already written (then with "Saved" and the stop step's checkpoint).
# (b), (c): the newest readable checkpoint loads (nothing passed over) and
# is at least as new as any checkpoint from before the signals; every
# earlier checkpoint file is still there, byte for byte; no process is left
# and the train_dir lock is free. In (c) the loading check is a resume
# (exit 0, restores the newest step, removes the temporaries), elsewhere
# eval_image_classifier on the train_dir.
# usage: preemption.sh BIN_DIR [ROUNDS=3]   (ROUNDS each of (b) and (c))
set -uo pipefail
bin=${1:?usage: preemption.sh BIN_DIR [ROUNDS=3]}
rounds=${2:-3}
source "$(dirname "$0")/common.sh"
start_test train_image_classifier eval_image_classifier convert_dataset

# (in place of common.sh's fail: the tails of the current log and of the
# last check's)
log=
fail() {
  echo "FAIL: $*"
  shift $#
  for f in "$log" "$work/check.log"; do
    [ -f "$f" ] && { echo "--- tail of ${f##*/}"; grep -v '^  class ' "$f" | tail -n 10; }
  done
  exit 1
}

log=$work/convert.log
make_dataset
write_train_cfg sgd save_checkpoints_steps=10 max_to_keep=0

dir=
ckpt_steps() { ls "$dir" 2>/dev/null | sed -n 's/^model\.ckpt-\([0-9][0-9]*\)$/\1/p' | sort -n; }
nap_open

# start NAME: a fresh train_dir and a long training in the background;
# returns once model.ckpt-10 is written (the signal handlers are installed
# by then) and a further random 0-1000 ms have passed.
start() {
  dir=$work/$1
  log=$work/$1.log
  "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
    --stop_at_step=10000000 >"$log" 2>&1 &
  trainer_pid=$!
  local deadline=$((SECONDS + 180))
  until [ -f "$dir/model.ckpt-10" ]; do
    kill -0 "$trainer_pid" 2>/dev/null ||
      { wait "$trainer_pid"; fail "$1: the trainer exited $? before model.ckpt-10"; }
    [ $SECONDS -lt $deadline ] || fail "$1: no model.ckpt-10 within 180 s"
    nap 0.02
  done
  random_sleep 1000
}
# The model.ckpt-* files before the signals, with their SHA-256 sums.
snapshot() {
  scan_newest
  before_max=$newest
  before_sums=$(cd "$dir" && ckpt_steps | sed 's/^/model.ckpt-/' | xargs sha256sum)
}
# start_sigterm NAME: start NAME, snapshot, then a SIGTERM to the trainer;
# sets signal_ms (its time).
start_sigterm() {
  start "$1"
  snapshot
  signal_ms=$(now_ms)
  kill -TERM "$trainer_pid"
}
# second_signal ROUND SIGNAL MAX_MS: SIGNAL to the trainer, in an odd ROUND
# as soon as a checkpoint's temporary file shows up (unless the trainer is
# gone first or 30 s pass), in an even one after a random 0-MAX_MS ms; sets
# how (when it was sent).
second_signal() {
  local deadline
  if (($1 % 2)); then
    # As soon as a temporary file shows up: a checkpoint is being written.
    how="when a checkpoint's temporary file appeared"
    deadline=$((SECONDS + 30))
    until has_temporary; do
      if ! kill -0 "$trainer_pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
        how="(no temporary seen: the trainer was done first)"
        break
      fi
      nap 0.002
    done
  else
    random_sleep "$3"
    how="after $slept_ms ms"
  fi
  kill -"$2" "$trainer_pid" 2>/dev/null
}
# waits for the trainer; sets rc and exit_ms (time from the first signal).
collect() {
  local deadline=$((SECONDS + 180))
  # (stderr off: no "Killed" job report from the shell)
  while kill -0 "$trainer_pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      fail "$name: the trainer still runs 180 s after the signal (a hang?)"
    fi
    nap 0.02
  done 2>/dev/null
  { wait "$trainer_pid"; } 2>/dev/null
  rc=$?
  exit_ms=$(($(now_ms) - signal_ms))
  trainer_pid=
  local left
  left=$(procs_of_test)
  [ -z "$left" ] || fail "$name: processes left: $left"
  flock -n "$dir/.lock" true || fail "$name: $dir/.lock is still held after the exit"
}
# The newest readable checkpoint loads (eval_image_classifier, or with
# USE_RESUME=1 a resume to two steps further, which also removes the
# temporaries) and nothing earlier was lost; sets eval_step.
check_dir() {
  local erc sum f
  # Earlier checkpoints first, before a resume writes anything: still there,
  # unchanged; only the newest step may have been written again by the
  # final save.
  scan_newest
  while read -r sum f; do
    [ -n "$f" ] || continue
    [ "$f" = "model.ckpt-$newest" ] && continue
    [ -f "$dir/$f" ] || fail "$name: $f, written before the signal, is gone"
    [ "$(sha256sum <"$dir/$f" | cut -d' ' -f1)" = "$sum" ] ||
      fail "$name: $f, written before the signal, changed"
  done <<<"$before_sums"
  if [ "${1:-}" = resume ]; then
    "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
      --stop_at_step=$((newest + 2)) >"$work/check.log" 2>&1
    erc=$?
    [ $erc = 0 ] || fail "$name: the resume exited $erc"
    eval_step=$(sed -n 's/^Restored .*model\.ckpt-[0-9]* (global_step \([0-9][0-9]*\))$/\1/p' "$work/check.log")
    [ -n "$eval_step" ] || fail "$name: the resume restored nothing"
    ! has_temporary || fail "$name: temporary files left after the resume: $(echo $(temporaries))"
  else
    "$bin/eval_image_classifier" --config "$work/train.cfg" --checkpoint_path="$dir" \
      >"$work/check.log" 2>&1
    erc=$?
    [ $erc = 0 ] || fail "$name: eval_image_classifier on the train_dir exited $erc"
    eval_step=$(sed -n 's/^eval_result .*"global_step":\([0-9][0-9]*\).*/\1/p' "$work/check.log")
    [ -n "$eval_step" ] || fail "$name: no eval_result with a global_step"
  fi
  ! grep -q "passed over" "$work/check.log" ||
    fail "$name: a model.ckpt-* file is unreadable: $(grep -m1 'passed over' "$work/check.log")"
  [ "$eval_step" = "$newest" ] ||
    fail "$name: read step $eval_step, but the newest model.ckpt-* is step $newest"
  [ "$eval_step" -ge "$before_max" ] ||
    fail "$name: newest readable checkpoint is step $eval_step, older than model.ckpt-$before_max from before the signal"
}
# After exit 143: the stop step's checkpoint was saved and is the newest.
check_saved() {
  local stop
  stop=$(sed -n 's/^Stopped at global_step \([0-9][0-9]*\): received SIGTERM.*/\1/p' "$log")
  [ -n "$stop" ] || fail "$name: exit 143 but no 'Stopped at global_step N: received SIGTERM'"
  grep -q "^Saved .*model\.ckpt-$stop\$" "$log" ||
    fail "$name: exit 143 but no 'Saved ...model.ckpt-$stop'"
  [ -f "$dir/model.ckpt-$stop" ] || fail "$name: model.ckpt-$stop is missing after exit 143"
  [ "$eval_step" = "$stop" ] ||
    fail "$name: stopped at step $stop, but the newest readable checkpoint is step $eval_step"
  saved_step=$stop
}

t_start=$SECONDS

# (a) One SIGTERM.
name="(a) SIGTERM"
start_sigterm a
collect
[ "$rc" = 143 ] || fail "$name: exit $rc (expected 143)"
check_dir
check_saved
tmps=$(temporaries)
[ -z "$tmps" ] || fail "$name: temporary files left after a clean stop: $(echo $tmps)"
echo "ok: $name after ${slept_ms} ms: exit 143 in $exit_ms ms, model.ckpt-$saved_step saved and loads"

# (b) SIGTERM, then a second SIGTERM.
n6=0 n143=0
for ((i = 1; i <= rounds; i++)); do
  name="(b$i) SIGTERM+SIGTERM"
  start_sigterm "b$i"
  second_signal "$i" TERM 150
  collect
  check_dir
  case $rc in
    6) n6=$((n6 + 1))
       outcome="exit 6 (stopped before the final checkpoint was complete)" ;;
    143) check_saved
         n143=$((n143 + 1))
         outcome="exit 143, model.ckpt-$saved_step saved" ;;
    *) fail "$name: exit $rc (expected 6, or 143 when the checkpoint was already written)" ;;
  esac
  echo "ok: $name, second signal $how: $outcome in $exit_ms ms; newest readable checkpoint" \
    "step $eval_step loads; earlier checkpoints intact: $(echo "$before_sums" | grep -c ckpt)"
done

# (c) SIGTERM, then SIGKILL.
for ((i = 1; i <= rounds; i++)); do
  name="(c$i) SIGTERM+SIGKILL"
  start_sigterm "c$i"
  second_signal "$i" KILL 300
  collect
  [ "$rc" = 137 ] || [ "$rc" = 143 ] || fail "$name: exit $rc (expected 137, or 143 if done first)"
  tmps=$(temporaries)
  check_dir resume
  [ "$rc" = 143 ] && check_saved
  echo "ok: $name $how: exit $rc; step $eval_step loads (a resume from it exits 0)," \
    "earlier checkpoints intact${tmps:+; temporary $(echo $tmps) removed by the resume}"
done
echo "ok: preemption: (a) + $rounds x (b) [$n6 x exit 6, $n143 x exit 143] + $rounds x (c)" \
  "($((SECONDS - t_start)) s)"
