#!/usr/bin/env bash
# Multi-host data plane on one machine: two trainers in two network
# namespaces joined by a veth pair (10.213.<n>.0/24 only, no loopback
# between them). Gloo must pick the veth address that routes to the
# coordinator; the replicas must end equal. Needs root (CAP_NET_ADMIN) and
# `ip netns`; exits 77 (CTest: skipped) where they are missing.
# usage: netns_training.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: netns_training.sh BIN_DIR}
source "$(dirname "$0")/netns_pair.sh"
netns_pair_up fnt
work=$(mktemp -d)
netns_cleanup_extra() { rm -rf "$work"; }

export FASTNN_JOB_TOKEN=netns-train-$$
common=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 LOCAL_RANK=0
        MASTER_ADDR=10.213.$subnet.1 MASTER_PORT=29521)
args=(--model_name=lenet --dataset_name=mock --num_classes=10 --batch_size=8
      --num_sample_per_epoch=10000 --stop_at_step=30 --log_loss_every_n_iters=10
      --num_preprocessing_threads=1 --intra_op_parallelism_threads=1
      --worker_timeout_secs=20 --train_dir="$work/train")
netns_start_trainers
wait $p0; rc0=$?
wait $p1; rc1=$?
tail -n 3 "$work/r0.log" "$work/r1.log"
sum0=$(sed -n 's/.*final weights checksum //p' "$work/r0.log")
sum1=$(sed -n 's/.*final weights checksum //p' "$work/r1.log")
if [ $rc0 != 0 ] || [ $rc1 != 0 ] || [ -z "$sum0" ] || [ "$sum0" != "$sum1" ]; then
  echo "FAIL: rank 0 exited $rc0 (checksum $sum0), rank 1 exited $rc1 (checksum $sum1)"
  exit 1
fi
echo "ok: 30 steps across two network namespaces, replicas equal ($sum0)"
