#!/bin/sh
# test_mpi_stress under LD_PRELOAD of libhcops_mpi.so with HCOPS_MPI_VERBOSE=1:
# thousands of outstanding MPI_Iallreduce completed in every way on 2, 3 and
# 4 ranks (three issue/completion orders); 2 to 4 threads per rank reducing
# concurrently on communicators of their own; first collectives on new
# communicators in orders that differ between ranks; MPI_Finalize with
# reductions still outstanding. Every run must pass, in time, with every rank's
# "hcops_mpi: rank R: N allreduce offloaded" line showing N > 0. The mix and
# order runs are repeated with HCOPS_MPI=0 (the MPI library alone) as the
# control.
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_stress

# run LABEL NP ARGS... (the program's); WANT: a line the output must have.
run() {
  label=$1 np=$2
  shift 2
  mpi_job "$label" "$np" "$want" -x LD_PRELOAD="$HCOPS_MPI_LIB" "$prog" "$@"
  if [ "${HCOPS_MPI:-1}" = 0 ]; then
    if grep -q '^hcops_mpi:' "$err"; then
      echo "FAIL: $label: HCOPS_MPI=0, yet the wrapper offloaded"
      failed=1
    fi
  else
    check_offloaded "$err" "$np" || failed=1
  fi
}

export HCOPS_MPI_VERBOSE=1
want=' 0 failed$'
run "2000 outstanding, seed 0" 2 mix 2000 0
run "2000 outstanding, seed 1" 3 mix 2000 1
run "3000 outstanding, seed 2" 4 mix 3000 2
run "4 threads" 2 threads 4
run "2 threads" 3 threads 2
run "3 threads" 4 threads 3
# Correct programs that any blocking step inside MPI_Iallreduce would hang:
# seconds each, so a short timeout.
MPI_TIMEOUT=40
run "first use, opposite orders, chain, late ranks" 2 order
run "first use, opposite orders, chain, late ranks" 3 order
run "first use, opposite orders, chain, late ranks" 4 order
MPI_TIMEOUT=120
export HCOPS_MPI=0
run "HCOPS_MPI=0 control" 3 mix 2000 1
run "HCOPS_MPI=0 control" 3 order
unset HCOPS_MPI
want='^rank 0: finalized$'
run "MPI_Finalize with requests outstanding" 2 finalize
run "MPI_Finalize with requests outstanding" 4 finalize
for r in 1 2 3; do
  grep -q "^rank $r: finalized$" "$out" || { echo "FAIL: rank $r did not return from MPI_Finalize"; failed=1; }
done

[ $failed = 0 ] && echo "test_mpi_stress.sh: all runs passed"
exit $failed
