#!/bin/sh
# test_work_sharing with 2 threads under each OpenMP wait policy, with more
# threads than cores under the active one (spinning threads that hold the
# cores: the hardest case for a late thread; 15 s a run), then on a
# synthetic machine of 8 NUMA domains with 2 threads per domain. The team is kept as asked
# (HCOPS_ADAPT_THREADS=0): a held-up thread would otherwise make the engine
# take fewer threads (test_contention tests that).
set -u
export HCOPS_ADAPT_THREADS=0
status=0
for threads in 2 7; do
  for policy in unset active passive; do
    [ "$threads" = 7 ] && [ "$policy" != active ] && continue
    echo "== HCOPS_NUM_THREADS=$threads OMP_WAIT_POLICY=$policy"
    if [ "$policy" = unset ]; then
      env -u OMP_WAIT_POLICY HCOPS_NUM_THREADS=$threads ./test_work_sharing || status=1
    else
      env OMP_WAIT_POLICY=$policy HCOPS_NUM_THREADS=$threads ./test_work_sharing || status=1
    fi
  done
done
dir=${HCOPS_TOPOLOGY_DIR:-}
if [ -n "$dir" ] && [ -f "$dir/epyc-nps4-2s.xml" ]; then
  echo "== epyc-nps4-2s.xml, 16 threads"
  HWLOC_XMLFILE=$dir/epyc-nps4-2s.xml HCOPS_NUM_THREADS=16 ./test_work_sharing || status=1
else
  echo "FAIL: no synthetic topologies in '${dir}' (the checkout's tests/topologies)"
  status=1
fi
exit $status
