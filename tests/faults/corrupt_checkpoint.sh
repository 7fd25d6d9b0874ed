#!/usr/bin/env bash
# Fault: damaged checkpoint files in a train_dir.
#  (a) the newest model.ckpt-* cut to half its size;
#  (b) one byte in the middle of the newest one inverted;
#  (c) every model.ckpt-* damaged.
# Asserts: (a), (b) the resume warns on stderr naming the file it passed
# over, restores the checkpoint before it (its step in the log, the run's
# step count in metrics.json) and exits 0; (c) the trainer exits 3 saying
# none is readable, and every file of the train_dir is exactly as before
# (names and SHA-256 sums); eval_image_classifier also exits 3 there.
# usage: corrupt_checkpoint.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: corrupt_checkpoint.sh BIN_DIR}
source "$(dirname "$0")/common.sh"
start_test train_image_classifier eval_image_classifier convert_dataset

make_dataset
write_train_cfg sgd save_checkpoints_steps=10 max_to_keep=0
dir=$work/train

# train NAME STOP: runs the trainer, stdout and stderr apart; sets rc.
rc=
train() {
  "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
    --stop_at_step="$2" >"$work/$1.out" 2>"$work/$1.log"
  rc=$?
}
# Inverts the byte at OFFSET of FILE, in place.
flip_byte() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  [ -n "$b" ] || fail "cannot read byte $2 of $1"
  printf "\\$(printf %03o $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
size_of() { stat -c %s "$1"; }
# Names and SHA-256 sums of every file in the train_dir, hidden ones too.
fingerprint() { (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
# resume_past NAME STOP DAMAGED EXPECTED_STEP: the resume must pass over
# DAMAGED with a warning, restore EXPECTED_STEP and finish at STOP.
resume_past() {
  local name=$1 stop=$2 damaged=$3 want=$4
  train "$name" "$stop"
  [ "$rc" = 0 ] || fail "$name: resume with a damaged model.ckpt-$damaged exited $rc"
  # (no grep -q inside a pipeline: under pipefail an early exit of the last
  # grep could fail the one before it with SIGPIPE)
  grep "warning" "$work/$name.log" | grep "passed over" | grep "model\.ckpt-$damaged" >/dev/null ||
    fail "$name: no warning on stderr naming the passed-over model.ckpt-$damaged"
  grep -q "Restored .*model\.ckpt-$want (global_step $want)" "$work/$name.out" "$work/$name.log" ||
    fail "$name: did not restore model.ckpt-$want: $(grep -h -m1 Restored "$work/$name.out" "$work/$name.log")"
  grep -q "\"final_step\": $stop," "$dir/metrics.json" &&
    grep -q "\"steps_this_run\": $((stop - want))," "$dir/metrics.json" ||
    fail "$name: metrics.json does not say $((stop - want)) steps to step $stop"
  echo "ok: ($name) $(grep -m1 'passed over' "$work/$name.log" | cut -c1-240)"
}

t_start=$SECONDS
train first 30
[ "$rc" = 0 ] || fail "first training to step 30 exited $rc"
for s in 10 20 30; do
  [ -f "$dir/model.ckpt-$s" ] || fail "model.ckpt-$s missing after the first training"
done

# (a) The newest checkpoint cut to half its size.
truncate -s $(($(size_of "$dir/model.ckpt-30") / 2)) "$dir/model.ckpt-30"
resume_past a_truncated 40 30 20

# (b) One byte in the middle of the newest one (now model.ckpt-40) inverted.
flip_byte "$dir/model.ckpt-40" $(($(size_of "$dir/model.ckpt-40") / 2))
resume_past b_flipped 50 40 30
grep -q "CRC mismatch" "$work/b_flipped.log" || fail "(b) the warning does not say 'CRC mismatch'"
# What the resumes wrote loads.
"$bin/eval_image_classifier" --config "$work/train.cfg" --checkpoint_path="$dir" \
  >"$work/b_eval.out" 2>"$work/b_eval.log"
erc=$?
[ $erc = 0 ] || fail "(b) eval_image_classifier after the resumes exited $erc"
grep -q '^eval_result .*"global_step":50[,}]' "$work/b_eval.out" "$work/b_eval.log" ||
  fail "(b) eval_image_classifier did not read step 50"

# (c) Every checkpoint damaged: one cut, the others with a byte inverted.
ckpts=$(ls "$dir" | grep '^model\.ckpt-[0-9]*$')
n=0
for f in $ckpts; do
  if [ $n = 0 ]; then
    truncate -s $(($(size_of "$dir/$f") / 2)) "$dir/$f"
  else
    flip_byte "$dir/$f" $(($(size_of "$dir/$f") / 2))
  fi
  n=$((n + 1))
done
before=$(fingerprint)
train c_all_damaged 70
[ "$rc" = 3 ] || fail "(c) with all $n checkpoints damaged the trainer exited $rc (expected 3)"
grep -q "none is readable" "$work/c_all_damaged.log" ||
  fail "(c) the error does not say that none is readable"
after=$(fingerprint)
[ "$before" = "$after" ] ||
  fail "(c) the train_dir changed: $(diff <(echo "$before") <(echo "$after") | head -n 10)"
"$bin/eval_image_classifier" --config "$work/train.cfg" --checkpoint_path="$dir" \
  >"$work/c_eval.log" 2>&1
erc=$?
[ $erc = 3 ] || fail "(c) eval_image_classifier on the damaged train_dir exited $erc (expected 3)"
[ "$before" = "$(fingerprint)" ] || fail "(c) eval_image_classifier changed the train_dir"
echo "ok: (c) all $n checkpoints damaged: the trainer and the evaluator exit 3, the train_dir" \
  "is untouched ($(echo "$before" | wc -l) files, same SHA-256) ($((SECONDS - t_start)) s)"
