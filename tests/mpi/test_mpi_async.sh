#!/bin/sh
# test_mpi_async under LD_PRELOAD of libhcops_mpi.so: the progress thread's
# own properties (timer slack, no CPU while idle), progress while the
# application makes no MPI call, and HCOPS_MPI_VERBOSE's account of exposed
# time. (test_mpi_async async fails without the wrapper: Open MPI alone
# advances the reduction only inside MPI calls.)
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_async

# run LABEL NP MPIRUN-ARGS... PROG PROG-ARGS..., under the preload.
run() {
  label=$1 np=$2
  shift 2
  mpi_job "$label" "$np" ' 0 failed$' -x LD_PRELOAD="$HCOPS_MPI_LIB" "$@"
}

MPI_TIMEOUT=60
run "progress thread" 2 "$prog" thread
# The main thread keeps off the progress thread's core (and its siblings).
# Unbound: Open MPI binds each of 2 ranks to a single core otherwise.
run "HCOPS_MPI_EXCLUSIVE=1" 2 --bind-to none -x HCOPS_MPI_EXCLUSIVE=1 "$prog" thread

# hidden_share CMP LIMIT: every rank's "(N% hidden)" satisfies N -CMP LIMIT.
hidden_share() {
  lines=$(grep -c '^hcops_mpi: rank' "$err")
  [ "$lines" -ge 1 ] || { echo "FAIL: no HCOPS_MPI_VERBOSE line"; failed=1; }
  for h in $(sed -n 's/^hcops_mpi: rank .*(\([0-9]*\)% hidden).*/\1/p' "$err"); do
    [ "$h" "-$1" "$2" ] || { echo "FAIL: $h% hidden, expected -$1 $2"; failed=1; }
  done
  grep '^hcops_mpi: rank' "$err"
}

export HCOPS_MPI_VERBOSE=1
# Progress with no MPI call from the application: all hidden. On 3 and 4
# ranks: on 2, Open MPI's own 2 MPI_Test calls can finish the reduction.
run "asynchronous progress" 3 "$prog" async && hidden_share ge 90
run "asynchronous progress" 4 "$prog" async && hidden_share ge 90
# A loop of MPI_Test does nothing but wait: mostly exposed (what is not is
# mostly the progress thread taking the core it shares with the rank).
run "MPI_Test loop" 2 "$prog" poll && hidden_share lt 75
# Unbound ranks see the same CPUs: each takes a different core from the end
# for its progress thread, never all of them the last one.
run "progress CPUs of unbound ranks" 2 --bind-to none "$prog" thread
cpus=$(sed -n 's/^hcops_mpi: rank .*progress CPU(s) \([0-9,-]*\).*/\1/p' "$err" | sort -u | wc -l)
[ "$cpus" = 2 ] || { echo "FAIL: 2 unbound ranks share a progress CPU"; grep '^hcops_mpi: rank' "$err"; failed=1; }
unset HCOPS_MPI_VERBOSE

[ $failed = 0 ] && echo "test_mpi_async.sh: all runs passed"
exit $failed
