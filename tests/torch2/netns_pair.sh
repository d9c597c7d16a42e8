#!/bin/sh
# Two "hosts" on this machine: network namespaces NAME0 and NAME1 joined by a
# veth pair (an interface hc0 in each, 10.199.R.1/24 and 10.199.R.2/24) whose
# two ends are shaped to RATE by tc's token bucket, so that traffic between
# processes started in them (ip netns exec) costs what it costs between
# nodes on such a link. Shared memory is not isolated: an MPI job across them
# must use its TCP transport only (--mca btl self,tcp).
#
#   netns_pair.sh up NAME RATE [OCTET]   e.g. up hcd 1gbit 199 (10.199.199.0/24)
#   netns_pair.sh down NAME
#   netns_pair.sh check      exit 0 if namespaces and tc can be used here
# An MPI job across them: mpirun in NAME0 (ip netns exec), its nodes NAME0
# and NAME1 (--host NAME0:1,NAME1:1), netns_agent.sh as its launch agent.
# Needs root (CAP_NET_ADMIN), iproute2 and the sch_tbf qdisc.
set -eu
cmd=${1:?up, down or check}
case $cmd in
  check)
    [ "$(id -u)" = 0 ] || { echo "not root"; exit 1; }
    command -v ip >/dev/null && command -v tc >/dev/null || { echo "no ip/tc (iproute2)"; exit 1; }
    probe=hcprobe$$
    ip netns add "$probe" 2>/dev/null || { echo "ip netns add fails (no CAP_NET_ADMIN?)"; exit 1; }
    ok=0
    if ip link add hcp0 netns "$probe" type veth peer name hcp1 netns "$probe" 2>/dev/null &&
      ip netns exec "$probe" tc qdisc add dev hcp0 root tbf rate 1gbit burst 512kb latency 10ms 2>/dev/null; then
      ok=1
    fi
    ip netns del "$probe"
    [ $ok = 1 ] || { echo "no veth pair or tc tbf here"; exit 1; }
    exit 0 ;;
  up)
    name=${2:?name} rate=${3:?rate, e.g. 1gbit} net=${4:-199}
    # The bucket holds what the link carries in 4 ms (at least 64 KiB), as
    # tbf needs at a timer tick of a few ms.
    bits=$(echo "$rate" | sed 's/gbit$/000000000/; s/mbit$/000000/')
    burst=$((bits / 8 / 250))
    [ $burst -ge 65536 ] || burst=65536
    for i in 0 1; do ip netns add "$name$i"; done
    ip link add hc0 netns "${name}0" type veth peer name hc0 netns "${name}1"
    for i in 0 1; do
      ip -n "$name$i" addr add "10.199.$net.$((i + 1))/24" dev hc0
      ip -n "$name$i" link set lo up
      ip -n "$name$i" link set hc0 up
      ip netns exec "$name$i" tc qdisc add dev hc0 root tbf rate "$rate" burst "$burst" latency 20ms
    done ;;
  down)
    name=${2:?name}
    # Deleting a namespace kills nothing: what still runs in it (an orted or
    # a rank left by a timeout) goes first.
    for i in 0 1; do
      ip netns pids "$name$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$name$i" 2>/dev/null || true
    done ;;
  *) echo "netns_pair.sh: up, down or check" >&2; exit 2 ;;
esac
