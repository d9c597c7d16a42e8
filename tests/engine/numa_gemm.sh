#!/bin/sh
# Runs test_numa_gemm once per machine of tests/topologies, with one thread
# per compute domain of that machine.
set -u
dir=${HCOPS_TOPOLOGY_DIR:?HCOPS_TOPOLOGY_DIR must name tests/topologies}
[ -d "$dir" ] || { echo "FAIL: no synthetic topologies in $dir (the checkout's tests/topologies)"; exit 1; }
status=0
for spec in epyc-nps4-2s.xml:8 lx2-like-2cpu-8die-256core.xml:16 xeon-max-flat-snc4-2s.xml:8; do
  xml=${spec%%:*}
  echo "== $xml"
  HWLOC_XMLFILE=$dir/$xml HCOPS_NUM_THREADS=${spec##*:} ./test_numa_gemm || status=1
done
exit $status
