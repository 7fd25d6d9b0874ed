#!/usr/bin/env bash
# Fault: SIGKILL at a random moment of a training that writes a checkpoint
# after every step, ROUNDS times on the same train_dir (every round resumes
# from what the previous one left), so that some kills land in the middle of
# a checkpoint write.
# Asserts after every kill: the trainer is gone and its train_dir lock is
# free; the newest model.ckpt-* loads: the next round restores exactly that
# step, with no file passed over as unreadable (and eval_image_classifier on
# the train_dir exits 0 reading it, after the first and the last kill); the
# step never goes backwards.
# At the end a clean resume reaches the final step with exit 0 and leaves no
# temporary file, and the train_dir holds exactly the max_to_keep (2) newest
# checkpoints. Prints how many kills left a temporary file behind (kills
# that hit a write).
# usage: kill_during_checkpoint.sh BIN_DIR [ROUNDS=8]
set -uo pipefail
bin=${1:?usage: kill_during_checkpoint.sh BIN_DIR [ROUNDS=8]}
rounds=${2:-8}
source "$(dirname "$0")/common.sh"
start_test train_image_classifier eval_image_classifier convert_dataset

make_dataset
write_train_cfg momentum save_summaries_secs=0
dir=$work/train

# $log shows a resume (named $1) that restored exactly model.ckpt-$2, found
# every model.ckpt-* file readable and, when $3 lists temporaries the kill
# left, reported removing them.
expect_resumed() {
  grep -q "Restored .*model\.ckpt-$2 (global_step $2)" "$log" ||
    fail "$1: did not restore model.ckpt-$2: $(grep -m1 Restored "$log")"
  ! grep -q "passed over" "$log" ||
    fail "$1: a model.ckpt-* file is unreadable: $(grep -m1 'passed over' "$log")"
  if [ -n "$3" ]; then
    grep -q "removed [0-9]* temporary file" "$log" ||
      fail "$1: did not report removing the temporaries $(echo $3)"
  fi
}

nap_open

hits=0
prev_tmps=
prev=0          # step of the newest checkpoint after the previous kill
t_start=$SECONDS
for ((round = 1; round <= rounds; round++)); do
  log=$work/round$round.log
  t0=$(date +%s%3N)
  "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
    --stop_at_step=10000000 --save_checkpoints_steps=1 --max_to_keep=2 >"$log" 2>&1 &
  trainer_pid=$!
  # A checkpoint newer than the one this round starts from (the trainer has
  # restored, trained a step and written).
  deadline=$((SECONDS + 180))
  while scan_newest; [ "$newest" -le "$prev" ]; do
    kill -0 "$trainer_pid" 2>/dev/null || { wait "$trainer_pid"; fail "round $round: the trainer exited $? before writing a checkpoint"; }
    [ $SECONDS -lt $deadline ] || fail "round $round: no new checkpoint within 180 s"
    nap 0.05
  done
  seen=$newest
  t1=$(date +%s%3N)
  random_sleep 1500
  kill -KILL "$trainer_pid"
  { wait "$trainer_pid"; } 2>/dev/null  # no "Killed" job report
  rc=$?
  trainer_pid=
  [ $rc = 137 ] || fail "round $round: the trainer exited $rc before the SIGKILL (expected 137)"
  tmps=$(temporaries)
  if [ -n "$tmps" ]; then
    hits=$((hits + 1))
    hit=" (hit a write: $(echo $tmps))"
  else
    hit=""
  fi
  left=$(procs_of_test)
  [ -z "$left" ] || fail "round $round: processes left after SIGKILL: $left"
  flock -n "$dir/.lock" true || fail "round $round: $dir/.lock is still held after SIGKILL"
  [ $round -le 1 ] || expect_resumed "round $round" "$prev" "$prev_tmps"
  # The newest model.ckpt-* must load: the next round's start restores it
  # (checked there, and by the final resume), and in the first and the last
  # round eval_image_classifier reads it too (a process start costs a second
  # or more on a loaded machine, so not in every round).
  scan_newest
  [ "$newest" -ge "$seen" ] ||
    fail "round $round: the newest checkpoint is step $newest, but model.ckpt-$seen had been written"
  [ "$newest" -ge "$prev" ] ||
    fail "round $round: the step went backwards: $prev -> $newest"
  evaluated=
  if [ $round = 1 ] || [ $round = "$rounds" ]; then
    t2=$(date +%s%3N)
    evaluate "eval$round"
    [ "$eval_step" = "$newest" ] ||
      fail "round $round: eval read step $eval_step, but the newest model.ckpt-* is step $newest"
    evaluated=", eval $(($(date +%s%3N) - t2)) ms"
  fi
  echo "round $round: killed after ${slept_ms} ms, newest checkpoint step $newest$hit" \
    "[start to new checkpoint $((t1 - t0)) ms$evaluated]"
  prev=$newest
  prev_tmps=$tmps
done

# A clean resume: removes the temporaries of the killed trainers, reaches the
# final step, and leaves no temporary.
had_tmps=$(temporaries)
final=$((prev + 3))
log=$work/final.log
"$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  --stop_at_step=$final --save_checkpoints_steps=1 --max_to_keep=2 >"$log" 2>&1
rc=$?
[ $rc = 0 ] || fail "final resume to step $final exited $rc"
expect_resumed "final resume" "$prev" "$had_tmps"
tmps=$(temporaries)
[ -z "$tmps" ] || fail "temporary files left after the clean resume: $(echo $tmps)"
grep -q "\"final_step\": $final," "$dir/metrics.json" ||
  fail "metrics.json does not record final_step $final: $(tr -d '\n' <"$dir/metrics.json")"
evaluate eval_final
[ "$eval_step" = "$final" ] || fail "after the clean resume the newest checkpoint is step $eval_step, not $final"
echo "ok: $rounds SIGKILLs during checkpoint-every-step training, $hits of them with a temporary" \
  "file on disk (kills that hit a write); each newest checkpoint loaded, steps never went" \
  "backwards, clean resume to step $final exited 0, no temporary left" \
  "($((SECONDS - t_start)) s)"
# Last: max_to_keep=2 means the two newest checkpoints, and no others, once
# a run has finished (README, docs/hyperparameters.md). A file renamed into
# place by a trainer killed before it updated the `checkpoint` index must
# not stay behind for good.
files=$(ls "$dir" | grep '^model\.ckpt-[0-9]*$' | sort -t- -k2 -n | tr '\n' ' ')
[ "$files" = "model.ckpt-$((final - 1)) model.ckpt-$final " ] ||
  fail "max_to_keep=2, but after the clean resume the train_dir holds: $files(index:" \
    "$(grep -o 'all_model_checkpoint_paths: "[^"]*"' "$dir/checkpoint" | cut -d'"' -f2 | tr '\n' ' '))" \
    "- a checkpoint written by a killed trainer but not yet in the index is never pruned"
echo "ok: max_to_keep=2 holds: $files"
