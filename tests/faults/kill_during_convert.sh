#!/usr/bin/env bash
# Fault: SIGKILL of `convert_dataset --overwrite` right after its
# first rename, then its second, and so on to its last (fault_shim.c kills
# it exactly there), over a folder converted before into 1 file a split;
# the new conversion writes 3. Over a folder with a manifest (written by
# this code), then after its first three renames over one without (as an
# older convert_dataset leaves it).
# Asserts after every kill: a reader (train_image_classifier --dry_run on
# split train) sees all of the old files or all of the new ones, or exits 3
# naming the interrupted conversion, and never a mix of the two (such as
# the old file and the first new shard read together). After the
# last kill a rerun with --overwrite repairs the folder; a folder without
# a manifest is read by glob.
# usage: kill_during_convert.sh BIN_DIR SHIM
set -uo pipefail
bin=${1:?usage: kill_during_convert.sh BIN_DIR SHIM}
shim=${2:?usage: kill_during_convert.sh BIN_DIR SHIM}
source "$(dirname "$0")/common.sh"
start_test --shim train_image_classifier convert_dataset

mkdir -p "$work/raw"
make_idx "$work/raw" train 320
make_idx "$work/raw" t10k 100
# convert OUT_DIR [FLAGS...]: MNIST into OUT_DIR (log: convert.log).
convert() {
  "$bin/convert_dataset" --dataset_name mnist --input "$work/raw" --dataset_dir "$1" \
    --num_threads 1 --quiet "${@:2}" >"$work/convert.log" 2>&1
}
# read_split DIR: rc and files (how many files of split train the trainer
# resolves); log: read.log.
read_split() {
  "$bin/train_image_classifier" --model_name=lenet --dataset_name=mnist \
    --dataset_dir="$1" --batch_size=8 --dry_run >"$work/read.log" 2>&1
  rc=$?
  files=$(sed -n 's/^# dataset: mnist split train, .* \([0-9][0-9]*\) file(s).*/\1/p' "$work/read.log")
}

convert "$work/old" || fail "convert_dataset exited $?"
read_split "$work/old"
[ "$rc" = 0 ] && [ "$files" = 1 ] || fail "the first conversion reads as $files file(s), exit $rc"

kills=0 refused=0
for baseline in manifest none; do
  if [ $baseline = none ]; then
    rm -f "$work/old"/*.manifest
    read_split "$work/old"
    [ "$rc" = 0 ] && [ "$files" = 1 ] || fail "a folder without a manifest reads as $files file(s), exit $rc"
  fi
  # Every rename over the manifest folder; the first three (the old
  # code's window) over the one without.
  limit=3
  [ $baseline = manifest ] && limit=40
  for ((n = 1; n <= limit; n++)); do
    rm -rf "$work/try"
    cp -a "$work/old" "$work/try"
    # (in a subshell, so that bash reports the kill to /dev/null)
    (LD_PRELOAD=$shim FASTNN_FAULT_KILL_AFTER_RENAME=$n \
      convert "$work/try" --overwrite --num_shards 3) 2>/dev/null
    crc=$?
    [ $crc = 0 ] && break
    [ $crc = 137 ] || fail "$baseline, rename $n: convert_dataset exited $crc (expected the SIGKILL, 137)"
    kills=$((kills + 1))
    read_split "$work/try"
    case "$rc:$files" in
      0:1 | 0:3) ;;
      3:)
        grep -q "interrupted" "$work/read.log" ||
          fail "$baseline, rename $n: exit 3 without naming the interrupted conversion"
        refused=$((refused + 1))
        ;;
      *) fail "$baseline, rename $n: the reader combined files of two conversions ($files files, exit $rc; $(ls "$work/try" | tr '\n' ' '))" ;;
    esac
    last=$n
  done
  if [ $baseline = manifest ]; then
    [ $crc = 0 ] || fail "convert_dataset was still killed after 40 renames"
    read_split "$work/try"
    [ "$rc" = 0 ] && [ "$files" = 3 ] || fail "the unkilled conversion reads as $files file(s), exit $rc"
  fi
  # Repair: rerun over what the last kill left.
  rm -rf "$work/try"
  cp -a "$work/old" "$work/try"
  (LD_PRELOAD=$shim FASTNN_FAULT_KILL_AFTER_RENAME=$last convert "$work/try" --overwrite --num_shards 3) 2>/dev/null
  convert "$work/try" --overwrite --num_shards 3 || fail "$baseline: the rerun exited $?"
  read_split "$work/try"
  [ "$rc" = 0 ] && [ "$files" = 3 ] || fail "$baseline: after the rerun $files file(s), exit $rc"
done
[ $refused -gt 0 ] || fail "no kill left a half-replaced folder (the test tested nothing)"
echo "PASS: $kills kills, $refused of them refused as interrupted"
