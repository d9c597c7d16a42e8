#!/bin/sh
# Runs test_held_a on this machine's team, then once per machine of
# tests/topologies with one thread per compute domain: the products then run
# in one part per domain, and each part's units must read the held panels
# where their own packing would have put them.
set -u
dir=${HCOPS_TOPOLOGY_DIR:?HCOPS_TOPOLOGY_DIR must name tests/topologies}
[ -d "$dir" ] || { echo "FAIL: no synthetic topologies in $dir (the checkout's tests/topologies)"; exit 1; }
status=0
./test_held_a || status=1
for spec in epyc-nps4-2s.xml:8 lx2-like-2cpu-8die-256core.xml:16 xeon-max-flat-snc4-2s.xml:8; do
  xml=${spec%%:*}
  echo "== $xml"
  HWLOC_XMLFILE=$dir/$xml HCOPS_NUM_THREADS=${spec##*:} ./test_held_a || status=1
done
exit $status
