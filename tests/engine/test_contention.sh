#!/bin/sh
# test_contention with 3 threads per core (more threads than the machine
# runs at once: the team must shrink to the cores), once through
# HCOPS_NUM_THREADS and once through OpenMP's own team size, then with the
# adaptation off (HCOPS_ADAPT_THREADS=0: the team stays as asked); last with
# one thread per core, where an imbalanced team must stay whole.
set -u
# The adaptation reads how fast the team's threads progress: under QEMU's
# user-mode emulation (make check-aarch64) that measures the emulator.
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "SKIP: the team's adaptation is timed, and emulated here"
  exit 77
fi
cores=$(getconf _NPROCESSORS_ONLN)
threads=$((3 * cores))
status=0
env -u HWLOC_XMLFILE -u HCOPS_ADAPT_THREADS HCOPS_NUM_THREADS=$threads ./test_contention || status=1
env -u HWLOC_XMLFILE -u HCOPS_NUM_THREADS -u HCOPS_ADAPT_THREADS OMP_NUM_THREADS=$threads ./test_contention || status=1
env -u HWLOC_XMLFILE -u HCOPS_NUM_THREADS OMP_NUM_THREADS=$threads HCOPS_ADAPT_THREADS=0 ./test_contention || status=1
# As many threads as cores, nothing else running: imbalance is not contention.
env -u HWLOC_XMLFILE -u HCOPS_ADAPT_THREADS HCOPS_NUM_THREADS=$cores ./test_contention || status=1
exit $status
