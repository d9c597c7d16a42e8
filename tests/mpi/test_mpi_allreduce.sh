#!/bin/sh
# test_mpi_allreduce (linked against libhcops_mpi) on 2, 3 and 4 ranks at each
# thread level, with HCOPS_MPI_VERBOSE=1: its results must be plain MPI's, and
# each rank's "hcops_mpi: rank R: N allreduce offloaded (A nonblocking, B
# blocking)" must show exactly the offloads the program counted (every
# MPI_Iallreduce, every MPI_Allreduce of at least HCOPS_MPI_OFFLOAD_MIN
# bytes). With HCOPS_MPI=0 the same program must pass with no such line (the
# wrapper passes every call through), and with HCOPS_MPI_OFFLOAD_MIN=0 every
# MPI_Allreduce must be offloaded. 16 Mi-element reductions run on 2 and 3
# ranks; ranks given different HCOPS_MPI_OFFLOAD_MIN must still agree; the
# progress thread's longest nap (HCOPS_MPI_NAP_MAX) at both ends of its range.
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_allreduce

# The verbose counts must equal the program's expectation, rank by rank.
check_counts() {
  check_offloaded "$err" "$2" || failed=1
  r=0
  while [ "$r" -lt "$2" ]; do
    want=$(sed -n "s/^rank $r: expect \([0-9]*\) nonblocking, \([0-9]*\) blocking$/(\1 nonblocking, \2 blocking)/p" "$out")
    got=$(sed -n "s/^hcops_mpi: rank $r: [0-9]* allreduce offloaded \((.*blocking)\).*/\1/p" "$err")
    if [ -z "$want" ] || [ "$want" != "$got" ]; then
      echo "FAIL: $1: rank $r offloaded '$got', expected '$want'"
      failed=1
    fi
    r=$((r + 1))
  done
}

export HCOPS_MPI_VERBOSE=1
mpi_checked "MPI_Init, 16 Mi floats" 2 "$prog" none big && check_counts "MPI_Init" 2
mpi_checked "MPI_THREAD_FUNNELED, 16 Mi floats" 3 "$prog" funneled big && check_counts "funneled" 3
mpi_checked "MPI_THREAD_MULTIPLE" 4 "$prog" multiple && check_counts "multiple" 4
mpi_checked "MPI_THREAD_SINGLE" 2 "$prog" single quick && check_counts "single" 2
export HCOPS_MPI_OFFLOAD_MIN=0
mpi_checked "HCOPS_MPI_OFFLOAD_MIN=0" 3 "$prog" serialized quick && check_counts "offload_min 0" 3
unset HCOPS_MPI_OFFLOAD_MIN
# Ranks given different thresholds: rank 1 alone would pass a 1 MiB
# MPI_Allreduce through while rank 0 offloads it, each waiting in a different
# collective. All must use rank 0's.
MPI_TIMEOUT=60
mpi_checked "HCOPS_MPI_OFFLOAD_MIN 0 on rank 0, 1 GiB on rank 1" 1 -x HCOPS_MPI_OFFLOAD_MIN=0 "$prog" single quick \
  : -np 1 -x HCOPS_MPI_OFFLOAD_MIN=1073741824 "$prog" single quick && check_counts "offload_min per rank" 2
MPI_TIMEOUT=120

# The progress thread's naps on a shared core (worker.cpp): the shortest
# and longest caps give MPI's results; a bad value warns and means 1 ms.
export HCOPS_MPI_NAP_MAX=20
mpi_checked "HCOPS_MPI_NAP_MAX=20" 2 "$prog" multiple quick && check_counts "nap 20 us" 2
export HCOPS_MPI_NAP_MAX=100000
mpi_checked "HCOPS_MPI_NAP_MAX=100000" 3 "$prog" multiple quick && check_counts "nap 100 ms" 3
export HCOPS_MPI_NAP_MAX=soon
mpi_checked "HCOPS_MPI_NAP_MAX=soon" 2 "$prog" multiple quick && check_counts "nap soon" 2
if ! grep -q "^hcops: warning: HCOPS_MPI_NAP_MAX=\"soon\"" "$err"; then
  echo "FAIL: HCOPS_MPI_NAP_MAX=soon: no warning"
  failed=1
fi
unset HCOPS_MPI_NAP_MAX

echo "== HCOPS_MPI=0: pass-through"
export HCOPS_MPI=0
mpi_checked "HCOPS_MPI=0" 3 "$prog" serialized
unset HCOPS_MPI
if grep -q '^hcops_mpi:' "$err"; then
  echo "FAIL: HCOPS_MPI=0: the wrapper offloaded:"
  grep '^hcops_mpi:' "$err"
  failed=1
fi

[ $failed = 0 ] && echo "test_mpi_allreduce.sh: all runs passed"
exit $failed
