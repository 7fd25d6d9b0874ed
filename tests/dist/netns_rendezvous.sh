#!/usr/bin/env bash
# Multi-host rendezvous on one machine: two network namespaces joined by a
# veth pair, rank 0 (the coordinator) in one, rank 1 in the other, talking
# over 10.213.<n>.0/24 only. Needs root (CAP_NET_ADMIN) and `ip netns`;
# exits 77 (CTest: skipped) where they are missing.
# usage: netns_rendezvous.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: netns_rendezvous.sh BIN_DIR}
probe=$bin/dist_session_probe
source "$(dirname "$0")/netns_pair.sh"
netns_pair_up fnr

export FASTNN_JOB_TOKEN=netns-test-$$
common=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 LOCAL_RANK=0
        MASTER_ADDR=10.213.$subnet.1 MASTER_PORT=29511)
out0=$(mktemp) out1=$(mktemp)
ip netns exec "$ns1" env "${common[@]}" RANK=1 "$probe" >"$out1" 2>&1 &
p1=$!
ip netns exec "$ns0" env "${common[@]}" RANK=0 "$probe" >"$out0" 2>&1 &
p0=$!
wait $p0; rc0=$?
wait $p1; rc1=$?
cat "$out0" "$out1"
rm -f "$out0" "$out1"
if [ $rc0 != 0 ] || [ $rc1 != 0 ]; then
  echo "FAIL: rank 0 exited $rc0, rank 1 exited $rc1"
  exit 1
fi
echo "ok: rendezvous and store across two network namespaces"
