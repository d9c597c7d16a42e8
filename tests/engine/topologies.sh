# Sourced by the engine tests that run a program on the synthetic machines
# of tests/topologies (HCOPS_TOPOLOGY_DIR), one thread per compute domain.
# on_each_topology PROGRAM: runs it on each; fails if any run fails.
dir=${HCOPS_TOPOLOGY_DIR:?HCOPS_TOPOLOGY_DIR must name tests/topologies}
[ -d "$dir" ] || { echo "FAIL: no synthetic topologies in $dir (the checkout's tests/topologies)"; exit 1; }

on_each_topology() {
  each_status=0
  for spec in epyc-nps4-2s.xml:8 lx2-like-2cpu-8die-256core.xml:16 xeon-max-flat-snc4-2s.xml:8; do
    xml=${spec%%:*}
    echo "== $xml"
    HWLOC_XMLFILE=$dir/$xml HCOPS_NUM_THREADS=${spec##*:} "$1" || each_status=1
  done
  return $each_status
}
