#!/usr/bin/env bash
# Fault: SIGTERM while the input pipeline yields no batch. The
# training file's open() hangs (fault_shim.c, as on a hung network file
# system), so the trainer waits in its feed from the start, and the signal
# must end that wait without a batch ever coming.
# Asserts: after the SIGTERM the trainer exits 143 within 20 s (the stop is
# noticed within about a second; the rest is the checkpoint and a loaded
# machine), says "received SIGTERM" and leaves a checkpoint. The open()
# hangs for 200 s, so neither the wait nor the exit may depend on it.
# usage: stalled_input_sigterm.sh BIN_DIR SHIM
set -uo pipefail
bin=${1:?usage: stalled_input_sigterm.sh BIN_DIR SHIM}
shim=${2:?usage: stalled_input_sigterm.sh BIN_DIR SHIM}
source "$(dirname "$0")/common.sh"
start_test --shim train_image_classifier convert_dataset

make_dataset
write_train_cfg sgd
dir=$work/train
nap_open
marker=$work/stalled
LD_PRELOAD=$shim FASTNN_FAULT_STALL_OPEN=mnist_train.tfrecord FASTNN_FAULT_STALL_SECS=200 \
  FASTNN_FAULT_STALL_MARKER=$marker \
  "$bin/train_image_classifier" --config "$work/train.cfg" --train_dir="$dir" \
  >"$work/train.log" 2>&1 &
trainer_pid=$!
# The pipeline's reader is in the hanging open(): the signal handlers are
# installed by then.
deadline=$((SECONDS + 120))
until [ -f "$marker" ]; do
  kill -0 "$trainer_pid" 2>/dev/null || { wait "$trainer_pid"; fail "the trainer exited $? before opening its data"; }
  [ $SECONDS -lt $deadline ] || fail "the trainer did not open its data within 120 s"
  nap 0.05
done
nap 0.5
t0=$(now_ms)
kill -TERM "$trainer_pid"
wait_trainer 20 "the trainer still ran 20 s after SIGTERM (waiting for a batch)"
ms=$(($(now_ms) - t0))
[ $rc = 143 ] || fail "exit $rc after SIGTERM (expected 143)"
grep -q "received SIGTERM" "$work/train.log" || fail "no 'received SIGTERM' in the log"
ls "$dir" | grep -q '^model\.ckpt-0$' || fail "no checkpoint model.ckpt-0 in the train_dir"
echo "PASS: exit 143 ${ms} ms after SIGTERM with the input hung"
