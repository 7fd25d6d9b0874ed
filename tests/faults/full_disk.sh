#!/usr/bin/env bash
# Fault: the file system of the train_dir fills up mid-run. The train_dir
# lives on a small tmpfs of its own; once the first periodic checkpoint is
# there, a filler file takes every free byte (dd until ENOSPC).
# Asserts: the trainer stops by itself with exit 3 (data error: a checkpoint
# it cannot write), its log naming that checkpoint (or the index) with "No
# space left on device"; it leaves
# no temporary file; the checkpoint written before the disk filled up is
# intact (eval_image_classifier loads it, nothing passed over); once the
# filler is removed, training resumes from it to the final step with exit 0.
# Needs root (mount); exits 77 (skipped) otherwise. Unmounts on every exit
# but SIGKILL, so every wait is bounded (at most 180 s each) to end well
# within CTest's timeout.
# usage: full_disk.sh BIN_DIR   (KEEP_WORK=1 keeps the work directory, the
# tmpfs unmounted, for a look at the logs)
set -uo pipefail
bin=${1:?usage: full_disk.sh BIN_DIR}
source "$(dirname "$0")/common.sh"
require_bins train_image_classifier eval_image_classifier convert_dataset
if [ "$(id -u)" != 0 ]; then
  echo "skipped: mounting a tmpfs needs root"
  exit 77
fi

mounted=
make_work
mnt=$work/mnt
# On exit (in place of common.sh's cleanup): the trainer killed, the tmpfs
# unmounted, then the work directory removed, or kept with KEEP_WORK=1.
cleanup() {
  kill_trainer
  if [ -n "$mounted" ]; then
    umount "$mnt" 2>/dev/null || umount -l "$mnt" ||
      echo "warning: could not unmount $mnt"
  fi
  # Never remove through a mount point that is still there.
  mountpoint -q "$mnt" 2>/dev/null || { [ -n "${KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"; }
}

mkdir -p "$mnt"
# 48 MiB: a LeNet checkpoint (plain SGD) is 13 MB, and a save needs room
# for the old file and the new one's temporary.
if ! mount -t tmpfs -o size=48m,mode=0755 fastnn_full_disk "$mnt" 2>"$work/mount.err"; then
  echo "skipped: cannot mount a tmpfs here: $(cat "$work/mount.err")"
  exit 77
fi
mounted=1

# The dataset outside the tmpfs.
make_dataset
write_train_cfg sgd save_checkpoints_steps=5 max_to_keep=1
dir=$mnt/train

nap_open

t_start=$SECONDS
log=$work/train.log
"$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  --stop_at_step=10000000 >"$log" 2>&1 &
trainer_pid=$!
deadline=$((SECONDS + 120))
while scan_newest; [ "$newest" = 0 ]; do
  kill -0 "$trainer_pid" 2>/dev/null ||
    { wait "$trainer_pid"; fail "the trainer exited $? before its first checkpoint"; }
  [ $SECONDS -lt $deadline ] || fail "no checkpoint within 120 s"
  nap 0.05
done
first=$newest
# (max_to_keep=1: a save that still fit may prune it meanwhile)
sum_first=$(sha256sum 2>/dev/null <"$dir/model.ckpt-$first")

# Fill the file system: dd stops at ENOSPC.
dd if=/dev/zero of="$mnt/filler" bs=1M 2>"$work/dd.log"
dd_rc=$?
[ $dd_rc != 0 ] && grep -q "No space left" "$work/dd.log" ||
  fail "dd did not run into ENOSPC (exit $dd_rc): $(cat "$work/dd.log")"
t_full=$(date +%s%3N)
echo "file system full after model.ckpt-$first: $(df -k --output=avail "$mnt" | tail -n 1 | tr -d ' ') KiB free"

# The next checkpoint cannot be written: the trainer must stop, by itself.
# The disk is kept full meanwhile: a save already under way when dd ran may
# still have fit, and its pruning of the older checkpoint frees room again.
deadline=$((SECONDS + 120))
topups=0
while kill -0 "$trainer_pid" 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || fail "the trainer still runs 120 s after the disk filled up (a hang?)"
  if [ "$(stat -f -c %a "$mnt")" != 0 ]; then
    topups=$((topups + 1))
    dd if=/dev/zero of="$mnt/filler$topups" bs=1M 2>/dev/null
  fi
  nap 0.05
done
wait "$trainer_pid"
rc=$?
trainer_pid=
[ $rc = 3 ] || fail "the trainer exited $rc on a full disk (expected 3, a data error)"
grep -q "No space left on device" "$log" ||
  fail "the trainer's error does not say 'No space left on device'"
# The write that failed first is the checkpoint's (or its index's); the
# log must name it, whatever else failed after it.
cause=$(grep -m1 -E "cannot [a-z ]+ '[^']*/(model\.ckpt-[0-9]+(\.tmp-[0-9]+)?|checkpoint)': No space left on device" "$log")
[ -n "$cause" ] || fail "the log does not name the checkpoint that could not be written"
echo "trainer exited 3, $(( $(date +%s%3N) - t_full )) ms after the disk filled up" \
  "($topups top-ups of the filler)"
echo "  cause: $cause"
echo "  last line: $(tail -n 1 "$log")"
tmps=$(temporaries)
[ -z "$tmps" ] || fail "temporary files left by the failed write: $(echo $tmps)"
scan_newest
last=$newest
[ "$last" -ge "$first" ] || fail "model.ckpt-$first disappeared; newest is now $last"
if [ "$last" = "$first" ] && [ -n "$sum_first" ]; then
  [ "$(sha256sum <"$dir/model.ckpt-$first")" = "$sum_first" ] ||
    fail "model.ckpt-$first changed while the disk was full"
fi

# The checkpoint from before the disk filled up loads, while the disk is
# still full (reading needs no space).
evaluate eval_full 120
[ "$eval_step" = "$last" ] ||
  fail "eval read step $eval_step, but the newest model.ckpt-* is step $last"

# Room again: the run resumes from that checkpoint to the end.
rm -f "$mnt"/filler*
final=$((last + 10))
log=$work/resume.log
timeout -k 10 180 "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  --stop_at_step=$final >"$log" 2>&1
rc=$?
[ $rc != 124 ] || fail "the resume still ran after 180 s (a hang)"
[ $rc = 0 ] || fail "resume after freeing the disk exited $rc"
grep -q "Restored .*model\.ckpt-$last (global_step $last)" "$log" ||
  fail "the resume did not restore model.ckpt-$last: $(grep -m1 Restored "$log")"
grep -q "\"final_step\": $final," "$dir/metrics.json" ||
  fail "metrics.json does not record final_step $final"
tmps=$(temporaries)
[ -z "$tmps" ] || fail "temporary files left after the resume: $(echo $tmps)"
evaluate eval_final 120
[ "$eval_step" = "$final" ] || fail "after the resume the newest checkpoint is step $eval_step, not $final"
echo "ok: a full disk stopped the trainer with exit 3 ('No space left on device'), no" \
  "temporary left; model.ckpt-$last loaded and training resumed to step $final" \
  "($((SECONDS - t_start)) s)"
