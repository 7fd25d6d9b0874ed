#!/usr/bin/env bash
# Multi-host rendezvous on one machine: two network namespaces joined by a
# veth pair, rank 0 (the coordinator) in one, rank 1 in the other, talking
# over 10.213.<n>.0/24 only. Needs root (CAP_NET_ADMIN) and `ip netns`;
# exits 77 (CTest: skipped) where they are missing.
# usage: netns_rendezvous.sh BIN_DIR
set -uo pipefail
bin=${1:?usage: netns_rendezvous.sh BIN_DIR}
probe=$bin/dist_session_probe
tag=$$
subnet=$((tag % 200 + 20))
ns0=fastnn_ns0_$tag ns1=fastnn_ns1_$tag
cleanup() {
  ip netns del "$ns0" 2>/dev/null
  ip netns del "$ns1" 2>/dev/null
}
trap cleanup EXIT
if [ "$(id -u)" != 0 ] || ! ip netns add "$ns0" 2>/dev/null; then
  echo "skipped: ip netns needs root with CAP_NET_ADMIN"
  exit 77
fi
ip netns add "$ns1" &&
  ip link add "fnv0_$tag" type veth peer name "fnv1_$tag" &&
  ip link set "fnv0_$tag" netns "$ns0" &&
  ip link set "fnv1_$tag" netns "$ns1" &&
  ip -n "$ns0" addr add "10.213.$subnet.1/24" dev "fnv0_$tag" &&
  ip -n "$ns1" addr add "10.213.$subnet.2/24" dev "fnv1_$tag" &&
  ip -n "$ns0" link set lo up && ip -n "$ns0" link set "fnv0_$tag" up &&
  ip -n "$ns1" link set lo up && ip -n "$ns1" link set "fnv1_$tag" up ||
  { echo "skipped: cannot create a veth pair"; exit 77; }

export FASTNN_JOB_TOKEN=netns-test-$tag
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
