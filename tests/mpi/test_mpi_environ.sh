#!/bin/sh
# test_mpi_environ with and without LD_PRELOAD of libhcops_mpi.so: the
# wrapper must change no variable of the process's environment across
# MPI_Init, offloaded allreduces and MPI_Finalize, also when it falls back
# from a malformed HCOPS_MPI_CORES. The program fails on any change to a
# HCOPS_* variable; the changes it prints to the others must be the MPI
# library's own, the same as in a run without the wrapper.
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_environ
MPI_TIMEOUT=60

# changes FILE: the program's "rank R: stage: ±VAR=value" lines, sorted.
changes() { grep '^rank [0-9]*: [A-Za-z_]*: [-+]' "$1" | sort; }

mpi_job "without the wrapper" 2 ' 0 failed$' "$prog"
changes "$out" >"$out.mpi"
trap 'rm -f "$out" "$err" "$out.mpi"' EXIT

# with LABEL ARGS...: the program under the preload with mpirun ARGS; its
# changes must be those of the run without the wrapper.
with() {
  label=$1
  shift
  mpi_job "$label" 2 ' 0 failed$' -x LD_PRELOAD="$HCOPS_MPI_LIB" "$@" "$prog"
  if ! changes "$out" | cmp -s - "$out.mpi"; then
    echo "FAIL: $label: the environment changed otherwise than without the wrapper:"
    changes "$out" | diff "$out.mpi" -
    failed=1
  fi
}

with "HCOPS_MPI_CORES unset"
with "HCOPS_MPI_CORES=last, HCOPS_MPI_VERBOSE=1" -x HCOPS_MPI_CORES=last -x HCOPS_MPI_VERBOSE=1
# Malformed: the wrapper warns and uses "last", but the variable stays.
with "HCOPS_MPI_CORES=bogus" -x HCOPS_MPI_CORES=bogus
grep -q '^hcops: .*HCOPS_MPI_CORES="bogus"' "$err" || { echo "FAIL: no warning about HCOPS_MPI_CORES=bogus"; failed=1; }
with "HCOPS_MPI_EXCLUSIVE=1, HCOPS_MPI_OFFLOAD_MIN=0" --bind-to none -x HCOPS_MPI_EXCLUSIVE=1 -x HCOPS_MPI_OFFLOAD_MIN=0

[ $failed = 0 ] && echo "test_mpi_environ.sh: all runs passed"
exit $failed
