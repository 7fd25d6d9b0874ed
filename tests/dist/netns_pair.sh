# Sourced by the netns tests: creates two network namespaces joined by a
# veth pair on 10.213.<subnet>.0/24 and removes them on exit; exits 77
# (CTest: skipped) without root / CAP_NET_ADMIN.
# usage: netns_pair_up PREFIX   sets ns0, ns1, subnet (rank 0 is .1, rank 1 .2)
netns_pair_up() {
  local prefix=$1 tag=$$
  subnet=$((tag % 200 + 20))
  ns0=${prefix}0_$tag ns1=${prefix}1_$tag
  trap 'ip netns del "$ns0" 2>/dev/null; ip netns del "$ns1" 2>/dev/null; netns_cleanup_extra' EXIT
  if [ "$(id -u)" != 0 ] || ! ip netns add "$ns0" 2>/dev/null; then
    echo "skipped: ip netns needs root with CAP_NET_ADMIN"
    exit 77
  fi
  local v0=${prefix}v0_$tag v1=${prefix}v1_$tag
  ip netns add "$ns1" &&
    ip link add "$v0" type veth peer name "$v1" &&
    ip link set "$v0" netns "$ns0" &&
    ip link set "$v1" netns "$ns1" &&
    ip -n "$ns0" addr add "10.213.$subnet.1/24" dev "$v0" &&
    ip -n "$ns1" addr add "10.213.$subnet.2/24" dev "$v1" &&
    ip -n "$ns0" link set lo up && ip -n "$ns0" link set "$v0" up &&
    ip -n "$ns1" link set lo up && ip -n "$ns1" link set "$v1" up ||
    { echo "skipped: cannot create a veth pair"; exit 77; }
}
# Starts $bin/train_image_classifier "${args[@]}" as rank 1 in $ns1 and rank
# 0 in $ns0, each with the environment "${common[@]}" and its log in
# $work/r<rank>.log; sets p0 and p1 to their pids.
netns_start_trainers() {
  ip netns exec "$ns1" env "${common[@]}" RANK=1 "$bin/train_image_classifier" "${args[@]}" \
    >"$work/r1.log" 2>&1 &
  p1=$!
  ip netns exec "$ns0" env "${common[@]}" RANK=0 "$bin/train_image_classifier" "${args[@]}" \
    >"$work/r0.log" 2>&1 &
  p0=$!
}
# Tests override this for their own temporary files.
netns_cleanup_extra() { :; }
