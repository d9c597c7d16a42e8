#!/bin/sh
# test_mpi_offload (linked against libhcops_mpi): hcops_mpi.h's offload of a
# client's operations (the torch.distributed backend's) on 2, 3 and 4 ranks:
# results, completion without any MPI call from the program, callbacks on
# the progress threads. HCOPS_MPI_VERBOSE=1 must count them on every rank
# ("N operations offloaded for torch.distributed"), =2 must give a line per
# operation with its name; with HCOPS_MPI=0 every one must be declined (the
# program then runs them itself).
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_offload

# client_counts NP WANT: every rank's summary counts WANT client operations.
client_counts() {
  r=0
  while [ "$r" -lt "$1" ]; do
    got=$(sed -n "s/^hcops_mpi: rank $r: \([0-9]*\) operations offloaded for torch.distributed.*/\1/p" "$err")
    [ "$got" = "$2" ] || { echo "FAIL: rank $r: '$got' client operations offloaded, expected $2"; failed=1; }
    r=$((r + 1))
  done
}

# exposed_reported NP: every rank's summary shows the 2 ms the program
# reported with hcops_mpi_exposed (it makes no blocking MPI call of its own
# on offloaded work).
exposed_reported() {
  n=$(grep '^hcops_mpi: rank [0-9]*: .* allreduce offloaded' "$err" | grep -vc 'exposed 0.000 s')
  [ "$n" = "$1" ] || { echo "FAIL: $n of $1 ranks report exposed time"; grep '^hcops_mpi: rank' "$err"; failed=1; }
}

# 3 rounds: 9 + 9 + 108 operations, all offloaded.
export HCOPS_MPI_VERBOSE=1
mpi_checked "offloaded" 2 "$prog"
client_counts 2 126
exposed_reported 2
mpi_checked "offloaded" 3 "$prog"
client_counts 3 126
mpi_checked "offloaded, unbound ranks" 4 --bind-to none "$prog"
client_counts 4 126

# Each rank's stderr into a file of its own: through mpirun's forwarding, a
# burst of lines from two ranks can come out with one cut into another.
export HCOPS_MPI_VERBOSE=2
rank_err=$(mktemp -d)
trap 'rm -f "$out" "$err"; rm -rf "$rank_err"' EXIT
mpi_checked "one line per operation" 2 sh -c 'exec "$0" 2>"$1.$OMPI_COMM_WORLD_RANK"' "$prog" "$rank_err/stderr"
for call in broadcast allgather alltoall reduce_scatter reduce allreduce barrier send recv; do
  n=$(grep -c "^hcops_verbose,mpi,0,$call,2," "$rank_err/stderr.0")
  [ "$n" = 14 ] || { echo "FAIL: rank 0: $n '$call' lines at HCOPS_MPI_VERBOSE=2, expected 14"; failed=1; }
done
# A client's wait is not seen per operation: its exposed field is "-".
grep -q '^hcops_verbose,mpi,0,broadcast,2,131072,MPI_INT64_T,-,1048576,[0-9.]*,-$' "$rank_err/stderr.0" ||
  { echo "FAIL: no line for the 1 MiB broadcast:"; grep '^hcops_verbose,mpi,0,broadcast' "$rank_err/stderr.0" | head -3; failed=1; }
unset HCOPS_MPI_VERBOSE

export HCOPS_MPI=0
mpi_checked "HCOPS_MPI=0: declined, run by the program" 2 "$prog" passthrough
unset HCOPS_MPI

[ $failed = 0 ] && echo "test_mpi_offload.sh: all runs passed"
exit $failed
