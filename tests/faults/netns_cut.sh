#!/usr/bin/env bash
# Fault: the network between two workers is cut in the middle of a run.
# Rank 0 (with the coordinator) trains in one network namespace, rank 1 in
# another, joined only by a veth pair; once both have logged steps, the veth
# is set down (packets vanish, no connection is reset).
# Asserts: both trainers exit 5 (distributed failure) within
# worker_timeout_secs (5) + 20 s of slack after the cut; rank 0's log names
# the lost rank 1, rank 1's log names the lost coordinator (or rank 0).
# Prints the time from the cut to each exit.
# Needs root (CAP_NET_ADMIN) and `ip netns`; exits 77 (skipped) otherwise.
# usage: netns_cut.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: netns_cut.sh BIN_DIR}
source "$(dirname "$0")/common.sh"
require_bins train_image_classifier
source "$(dirname "$0")/../dist/netns_pair.sh"
netns_pair_up fcut
work=$(mktemp -d)
p0= p1=
netns_cleanup_extra() {
  local p
  for p in $p0 $p1; do
    if kill -0 "$p" 2>/dev/null; then
      kill -KILL "$p" 2>/dev/null
      { wait "$p"; } 2>/dev/null
    fi
  done
  rm -rf "$work"
}
trap 'exit 1' INT TERM

timeout_secs=5
slack_secs=20
# (in place of common.sh's fail: the tails of both ranks' logs)
fail() {
  echo "FAIL: $*"
  for f in "$work/r0.log" "$work/r1.log"; do
    [ -f "$f" ] && { echo "--- tail of ${f##*/}"; tail -n 12 "$f"; }
  done
  exit 1
}

# The veth end in rank 0's namespace.
veth0=$(ip -n "$ns0" -o link show type veth | sed -n 's/^[0-9]*: \([^@:]*\)[@:].*/\1/p' | head -n 1)
[ -n "$veth0" ] || fail "no veth in $ns0"

export FASTNN_JOB_TOKEN=netns-cut-$$
common=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 LOCAL_RANK=0
        MASTER_ADDR=10.213.$subnet.1 MASTER_PORT=29531)
args=(--model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8
      --num_sample_per_epoch=10000 --stop_at_step=10000000 --log_loss_every_n_iters=5
      --num_preprocessing_threads=1 --intra_op_parallelism_threads=1 --use_fp16=False
      --save_checkpoints_steps=0 --save_interval_secs=0
      --worker_timeout_secs=$timeout_secs --train_dir="$work/train")
netns_start_trainers

# Both must be training: step 10 logged by each (the rendezvous takes
# longer on a loaded machine; 180 s is generous).
deadline=$((SECONDS + 180))
until grep -q "global_step = 10\b" "$work/r0.log" && grep -q "global_step = 10\b" "$work/r1.log"; do
  for p in $p0 $p1; do
    kill -0 "$p" 2>/dev/null || fail "a trainer exited before both reached step 10"
  done
  [ $SECONDS -lt $deadline ] || fail "the two trainers did not both reach step 10 within 180 s"
  sleep 0.1
done

ip -n "$ns0" link set "$veth0" down || fail "cannot set $veth0 down"
cut_ms=$(now_ms)
step_at_cut=$(grep -o "global_step = [0-9]*" "$work/r0.log" | tail -n 1)
echo "cut the link ($veth0 down in $ns0) at rank 0's $step_at_cut"

# Both must end by themselves; poll, never sleep a fixed time.
limit_ms=$(((timeout_secs + slack_secs) * 1000))
hard_deadline=$((SECONDS + timeout_secs + slack_secs + 60))
end0= end1=
while [ -z "$end0" ] || [ -z "$end1" ]; do
  [ -n "$end0" ] || kill -0 "$p0" 2>/dev/null || end0=$(now_ms)
  [ -n "$end1" ] || kill -0 "$p1" 2>/dev/null || end1=$(now_ms)
  [ $SECONDS -lt $hard_deadline ] || break
  sleep 0.05
done 2>/dev/null
[ -n "$end0" ] || fail "rank 0 still runs $((timeout_secs + slack_secs + 60)) s after the cut (a hang)"
[ -n "$end1" ] || fail "rank 1 still runs $((timeout_secs + slack_secs + 60)) s after the cut (a hang)"
{ wait "$p0"; } 2>/dev/null
rc0=$?
{ wait "$p1"; } 2>/dev/null
rc1=$?
d0=$((end0 - cut_ms)) d1=$((end1 - cut_ms))
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
echo "rank 0 exited $rc0 after $(secs $d0) s; rank 1 exited $rc1 after $(secs $d1) s" \
  "(worker_timeout_secs=$timeout_secs)"
echo "  rank 0: $(grep -m1 'distributed failure' "$work/r0.log" | cut -c1-300)"
echo "  rank 1: $(grep -m1 'distributed failure' "$work/r1.log" | cut -c1-300)"
[ $rc0 = 5 ] || fail "rank 0 exited $rc0 after the cut (expected 5)"
[ $rc1 = 5 ] || fail "rank 1 exited $rc1 after the cut (expected 5)"
[ $d0 -le $limit_ms ] || fail "rank 0 took $(secs $d0) s to exit, more than $timeout_secs + $slack_secs s"
[ $d1 -le $limit_ms ] || fail "rank 1 took $(secs $d1) s to exit, more than $timeout_secs + $slack_secs s"
grep "distributed failure" "$work/r0.log" | grep -E "rank 1|worker 1" >/dev/null ||
  fail "rank 0's error does not name the lost rank 1"
grep "distributed failure" "$work/r1.log" | grep -E "coordinator|rank 0" >/dev/null ||
  fail "rank 1's error does not name the lost coordinator / rank 0"
echo "ok: link cut mid-run: both workers exited 5 (rank 0 in $(secs $d0) s, rank 1 in" \
  "$(secs $d1) s after the cut, limit $timeout_secs + $slack_secs s), each naming its lost peer"
